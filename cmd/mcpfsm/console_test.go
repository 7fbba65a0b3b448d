package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfsm/mcpfsm/access"
	"github.com/mcpfsm/mcpfsm/console"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
)

// hostProcess starts mcpfsm run with the console on a free port, and
// returns its stderr, the console's address, its PID and a function that
// stops it with SIGTERM and waits.
func hostProcess(t *testing.T, cfg string) (*watcher, string, int, func() *os.ProcessState) {
	t.Helper()
	cmd := self(t, "run", "-config", cfg, "-http", "127.0.0.1:0")
	stderr := newWatcher()
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	wait := func() *os.ProcessState {
		if !waited {
			waited = true
			_ = cmd.Wait()
		}
		return cmd.ProcessState
	}
	t.Cleanup(func() {
		if !waited {
			_ = cmd.Process.Kill()
			wait()
		}
	})
	at := stderr.waitFor(t, 0, "console at http://")
	addr := strings.Fields(stderr.String()[at:])[0]
	addr = strings.TrimSuffix(strings.TrimSuffix(addr, `"`), "/")
	return stderr, addr, cmd.Process.Pid, func() *os.ProcessState {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		return wait()
	}
}

// madeToken reads the token a host given none made for its surface at
// addr.
func madeToken(t *testing.T, addr string) string {
	t.Helper()
	f, err := access.TokenFile(addr)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := access.LoadToken(f, nil)
	if err != nil || tok == "" {
		t.Fatalf("the token file of %s: %q %v", addr, tok, err)
	}
	return tok
}

// TestConsoleCommands runs mcpfsm run -http as a process and drives it with
// mcpfsm status and mcpfsm reconnect: an exhausted server comes back with
// reconnect, a killed backend is reported and recovers, and SIGHUP applies
// a changed config without touching the unchanged server.
func TestConsoleCommands(t *testing.T) {
	dir := t.TempDir()
	logA, logB, logC := filepath.Join(dir, "a.pids"), filepath.Join(dir, "b.pids"), filepath.Join(dir, "c.pids")
	ready := filepath.Join(dir, "ready")
	bin := fixture.Build(t)
	// flaky exits at once until the file "ready" exists.
	flaky := obj{
		"command":   "sh",
		"args":      []string{"-c", `if [ -f "$0" ]; then exec "$1" -pidlog "$2"; else exit 1; fi`, ready, bin, logB},
		"reconnect": obj{"initialDelayMs": 20, "maxDelayMs": 40, "maxAttempts": 1},
	}
	cfg1 := obj{"mcpServers": obj{"alpha": fixtureServer(t, "-pidlog", logA), "flaky": flaky}}
	path := writeConfig(t, cfg1)
	stderr, addr, host, stop := hostProcess(t, path)
	stderr.waitFor(t, 0, "giving up after 1 consecutive failed reconnect attempts", "flaky")
	stderr.waitFor(t, 0, "connected and registered tools", "server=alpha")

	code, out, errOut := runCmd(t, "status", "-http", addr)
	if code != 0 {
		t.Fatalf("status: %d %s", code, errOut)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(line)
		rows[f[0]] = f[1] + " " + f[2]
	}
	if diff := cmp.Diff(map[string]string{"alpha": "established 0/5", "flaky": "exhausted 1/1"}, rows); diff != "" {
		t.Errorf("status table (-want +got):\n%s\n%s", diff, out)
	}

	// /metrics: the supervisors' instruments in Prometheus text format,
	// behind the token run made for itself (no other user can read it).
	req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+madeToken(t, addr))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`mcpfsm_connection_state{mcpfsm_server_name="alpha",mcpfsm_state="established"} 1`,
		`mcpfsm_connection_state{mcpfsm_server_name="flaky",mcpfsm_state="exhausted"} 1`,
		`mcpfsm_connection_transitions_total{mcpfsm_server_name="flaky",mcpfsm_transition_event="attempt-failed"`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}

	// reconnect fails while the server still fails, then brings it back.
	if code, out, errOut := runCmd(t, "reconnect", "-http", addr, "flaky"); code != 1 || !strings.Contains(errOut, "flaky") {
		t.Errorf("reconnect of a still-failing server: %d %q %q", code, out, errOut)
	}
	if err := os.WriteFile(ready, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCmd(t, "reconnect", "-http", addr, "flaky"); code != 0 || !strings.HasPrefix(out, "flaky: established") {
		t.Fatalf("reconnect: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := runCmd(t, "reconnect", "-http", addr, "nope"); code != 1 || !strings.Contains(errOut, `unknown server "nope"`) {
		t.Errorf("reconnect of an unknown server: %d %q", code, errOut)
	}

	// A killed backend: lost, then reconnected.
	alphaPIDs := fixture.PIDs(t, logA)
	if len(alphaPIDs) != 1 {
		t.Fatalf("alpha started %d processes, want 1", len(alphaPIDs))
	}
	at := len(stderr.String())
	syscall.Kill(alphaPIDs[0], syscall.SIGKILL)
	stderr.waitFor(t, at, "connection lost; reconnecting", "reconnected and re-synced tools")
	alphaPIDs = fixture.PIDs(t, logA)

	// SIGHUP: alpha unchanged, flaky removed, gamma added.
	cfg2 := obj{"mcpServers": obj{"alpha": fixtureServer(t, "-pidlog", logA), "gamma": fixtureServer(t, "-pidlog", logC)}}
	data, _ := json.Marshal(cfg2)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	flakyPID := lastPID(t, logB)
	at = len(stderr.String())
	if err := syscall.Kill(host, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	stderr.waitFor(t, at, "applied the config", "added=gamma", "removed=flaky", "unchanged=alpha")
	stderr.waitFor(t, at, "connected and registered tools", "gamma")
	if got := fixture.PIDs(t, logA); !slices.Equal(got, alphaPIDs) || !fixture.Alive(got[len(got)-1]) {
		t.Errorf("alpha's processes %v after the reload, want %v, still running", got, alphaPIDs)
	}
	if fixture.Alive(flakyPID) {
		t.Errorf("the removed server's process %d still runs", flakyPID)
	}
	var r console.StatusReport
	code, out, errOut = runCmd(t, "status", "-http", addr, "-json")
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("status -json: %d %q %q", code, out, errOut)
	}
	var names []string
	for _, s := range r.Servers {
		names = append(names, s.Name+"="+s.State)
	}
	if diff := cmp.Diff([]string{"alpha=established", "gamma=established"}, names); diff != "" {
		t.Errorf("servers after the reload (-want +got):\n%s", diff)
	}

	// A config that does not parse is reported; the servers keep running.
	if err := os.WriteFile(path, []byte(`{"mcpServers": {`), 0o644); err != nil {
		t.Fatal(err)
	}
	at = len(stderr.String())
	syscall.Kill(host, syscall.SIGHUP)
	stderr.waitFor(t, at, "reload failed; the running servers are unchanged")
	if code, out, _ := runCmd(t, "status", "-http", addr); code != 0 || !strings.Contains(out, "gamma") {
		t.Errorf("status after a broken reload: %d %q", code, out)
	}
	// ... and so is POST /api/reload.
	err = (&console.Client{Addr: addr, Token: madeToken(t, addr)}).Reload(t.Context())
	var ae *console.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 500 || !strings.Contains(ae.Message, "the running servers are unchanged") {
		t.Errorf("POST /api/reload of a broken file: %v", err)
	}

	if st := stop(); !st.Success() {
		t.Errorf("mcpfsm run exited with %v:\n%s", st, stderr.String())
	}
	allGone(t, logA, logB, logC)
	if code, _, errOut := runCmd(t, "status", "-http", addr); code != 1 || !strings.Contains(errOut, "no mcpfsm host is running") {
		t.Errorf("status with no host: %d %q", code, errOut)
	}
}
