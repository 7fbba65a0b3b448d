package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/health"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func probe(t *testing.T, url string) (int, health.Report) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep health.Report
	if strings.HasSuffix(url, health.ReadyPath) {
		if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
			t.Fatalf("%s: %v", url, err)
		}
	}
	return resp.StatusCode, rep
}

// /healthz answers while serve runs; /readyz answers 503 naming a server
// that never comes up.
func TestServeProbes(t *testing.T) {
	dir := t.TempDir()
	pids := filepath.Join(dir, "fix.pids")
	cfg := writeConfig(t, obj{"mcpServers": obj{
		"fix":   obj{"command": fixture.Build(t), "args": []string{"-pidlog", pids}},
		"never": obj{"command": "sh", "args": []string{"-c", "exit 3"}, "reconnect": obj{"initialDelayMs": 60000, "maxDelayMs": 60000, "maxAttempts": 3}},
	}})
	cmd, stderr, url := serveHTTPProcess(t, cfg)
	base := strings.TrimSuffix(url, "/mcp")
	if code, _ := probe(t, base+health.LivePath); code != http.StatusOK {
		t.Errorf("/healthz: %d, want 200", code)
	}
	code, rep := probe(t, base+health.ReadyPath)
	if code != http.StatusServiceUnavailable || rep.Servers != 2 || len(rep.NotReady) != 1 || rep.NotReady[0].Name != "never" {
		t.Errorf("/readyz with a server down: %d %+v, want 503 naming never", code, rep)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(t, cmd, stderr); code != 0 {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	allGone(t, pids)
}

// SIGTERM with a Streamable HTTP client connected (its GET stream open)
// ends serve within a second, logged, with no server process left.
func TestServeHTTPStopsPromptlyWithAClient(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "fix.pids")
	cfg := writeConfig(t, obj{"mcpServers": obj{"fix": obj{"command": fixture.Build(t), "args": []string{"-pidlog", pids}}}})
	cmd, stderr, url := serveHTTPProcess(t, cfg)
	fc := connect(t, &mcp.StreamableClientTransport{Endpoint: url})
	if text, isErr := fc.call(t, "mcp__fix__echo", "hi"); isErr || text != "hi" {
		t.Fatalf("call = %q, isError %v", text, isErr)
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(t, cmd, stderr); code != 0 {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	// Wall time also counts this machine's load; the process's own count,
	// from the signal to its last line, is what the promise is about.
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("serve took %v to exit after SIGTERM with a client connected", took)
	}
	_ = fc.sess.Close() // the client would retry its stream
	at := stderr.waitFor(t, 0, "received terminated: draining")
	at = stderr.waitFor(t, at, `msg=stopped took=`)
	took, err := time.ParseDuration(strings.Fields(stderr.String()[at:])[0])
	t.Logf("serve stopped %v after SIGTERM with a client connected (wall %v)", took, time.Since(start))
	if err != nil || took >= time.Second {
		t.Errorf("serve stopped %v (%v) after SIGTERM with a client connected, want under 1s; stderr:\n%s", took, err, stderr)
	}
	allGone(t, pids)
}
