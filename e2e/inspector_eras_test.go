package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/internal/fixture"
)

// TestInspectorOnBothEras: the MCP Inspector CLI 2.12.0, a third-party
// client, calls a tool and reads a resource through serve -names raw on
// the default (classic) era and with --protocol-era modern, over stdio
// and over Streamable HTTP (whose handler serves 2026-07-28 statelessly).
func TestInspectorOnBothEras(t *testing.T) {
	launcher, path := fixture.Inspector(t)
	cfg := serveConfig(t)
	url := serveHTTP(t, cfg)
	host := fixture.BuildHost(t)
	for _, front := range []string{"stdio", "http"} {
		for _, era := range []string{"classic", "modern"} {
			t.Run(front+"/"+era, func(t *testing.T) {
				target := []string{url, "--transport", "http"}
				if front == "stdio" {
					target = []string{host, "serve", "-config", cfg, "-names", "raw"}
				}
				if era == "modern" {
					target = append(target, "--protocol-era", "modern")
				}
				run := func(args ...string) map[string]any { t.Helper(); return inspect(t, launcher, path, target, args...) }
				v := run("--method", "tools/call", "--tool-name", "test_simple_text")
				if b, _ := json.Marshal(v["content"]); !strings.Contains(string(b), "This is a simple text response for testing.") {
					t.Errorf("tools/call test_simple_text = %s", b)
				}
				v = run("--method", "resources/read", "--uri", "test://static-text")
				if b, _ := json.Marshal(v["contents"]); !strings.Contains(string(b), "This is the content of the static text resource.") {
					t.Errorf("resources/read = %s", b)
				}
			})
		}
	}
}

// inspect runs the Inspector CLI on target with args and returns its JSON
// output.
func inspect(t *testing.T, launcher, path string, target []string, args ...string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append(append([]string{launcher, "--cli"}, target...), args...)...)
	cmd.Env = append(os.Environ(), "PATH="+path, "HOME="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("inspector %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out, stderr.String())
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("inspector %v: output is not JSON: %v\n%s", args, err, out)
	}
	return v
}

// TestInspectorAcrossABackendKill: the Inspector CLI calls a tool through
// a long-running serve -listen on both eras, the backend (shared by every
// client: one instance per era) is SIGKILLed, and once serve has
// reconnected both the same calls succeed again.
func TestInspectorAcrossABackendKill(t *testing.T) {
	launcher, path := fixture.Inspector(t)
	cfg := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `{"mcpServers": {"everything": {"command": %q, "isolation": "shared"}}}`, everything(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, url, lines := serveListening(t, cfg)
	await := func(what string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case l := <-lines:
				if strings.Contains(l, what) {
					return
				}
			case <-deadline:
				t.Fatalf("serve never logged %q within 30s", what)
			}
		}
	}
	call := func() {
		t.Helper()
		for _, era := range [][]string{nil, {"--protocol-era", "modern"}} {
			target := append([]string{url, "--transport", "http"}, era...)
			v := inspect(t, launcher, path, target, "--method", "tools/call", "--tool-name", "test_simple_text")
			if b, _ := json.Marshal(v["content"]); !strings.Contains(string(b), "This is a simple text response for testing.") {
				t.Errorf("tools/call %v = %s", era, b)
			}
		}
	}
	call()
	// A child is listed under the thread that started it.
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", cmd.Process.Pid))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("cannot list serve's threads: %v", err)
	}
	var fields []string
	for _, task := range tasks {
		children, _ := os.ReadFile(task)
		fields = append(fields, strings.Fields(string(children))...)
	}
	// The shared server's instance for classic clients, and the one for
	// 2026-07-28 clients, started by the modern call.
	if len(fields) != 2 {
		t.Fatalf("serve has children %q, want the backend's two instances, one per era", fields)
	}
	for _, f := range fields {
		pid, _ := strconv.Atoi(f)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	await("reconnected")
	await("reconnected")
	call()
}
