package front

import (
	"github.com/mcpfsm/mcpfsm/front/internal/bridge"
	"os"
	"strings"
	"testing"
)

// docs/design.md shows the bridged-request machine's current diagram.
func TestBridgeSpecAndItsDiagram(t *testing.T) {
	checkDocShows(t, "bridged-request", bridge.Spec().Mermaid())
}

// checkDocShows fails unless docs/design.md shows the Mermaid diagram
// want of the machine named.
func checkDocShows(t *testing.T, machine, want string) {
	t.Helper()
	doc, err := os.ReadFile("../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), want) {
		t.Errorf("docs/design.md does not show the %s machine as it is; put this diagram in its front section:\n```mermaid\n%s```", machine, want)
	}
}
