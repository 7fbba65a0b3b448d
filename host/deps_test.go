package host

import (
	"os/exec"
	"strings"
	"testing"
)

// A Go program that runs a host config builds without a console, metrics,
// OpenTelemetry or Prometheus: the command that serves them wires them in.
func TestHostDependsOnNoConsoleNorMetrics(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"go.opentelemetry.io", "github.com/prometheus", "github.com/mcpfsm/mcpfsm/console",
			"github.com/mcpfsm/mcpfsm/metrics", "github.com/mcpfsm/mcpfsm/front"} {
			if dep == banned || strings.HasPrefix(dep, banned+"/") {
				t.Errorf("host depends on %s", dep)
			}
		}
	}
}
