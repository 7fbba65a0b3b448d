package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/internal/fixture"
)

// TestMain doubles as the mcpfsm command: with MCPFSM_TEST_MAIN=1 the
// test binary runs main, so end-to-end tests run mcpfsm as a real process
// without building it.
func TestMain(m *testing.M) {
	if mode := os.Getenv(testBrowserEnv); mode != "" {
		os.Exit(testBrowser(mode, os.Args[1:]))
	}
	if os.Getenv("MCPFSM_TEST_MAIN") == "1" || os.Getenv(demoServerEnv) != "" {
		main()
	}
	// The tokens serve and run make for themselves (and the clients find)
	// are kept in a state directory of the tests' own, not the user's.
	if os.Getenv("MCPFSM_TEST_STATE") == "" {
		os.Setenv("MCPFSM_TEST_STATE", "1")
		os.Setenv("XDG_STATE_HOME", filepath.Join(os.TempDir(), "mcpfsm-test-state-"+strconv.Itoa(os.Getpid())))
	}
	fixture.VerifyTestMain(m)
}

// writeConfig writes cfg as JSON to a temporary file and returns its path.
func writeConfig(t *testing.T, cfg any) string {
	t.Helper()
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mcpfsm.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

type obj = map[string]any

// fixtureServer is a config entry running the fixture server with args.
func fixtureServer(t *testing.T, args ...string) obj {
	return obj{
		"command":   fixture.Build(t),
		"args":      args,
		"reconnect": obj{"initialDelayMs": 20, "maxDelayMs": 100, "maxAttempts": 5},
	}
}

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runContext(t.Context(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestCheck(t *testing.T) {
	// The example runs npx: give check one on PATH, whatever this machine has.
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "npx"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	code, out, errOut := runCmd(t, "check", "-config", "../../config/testdata/mcpfsm.json")
	if code != 0 {
		t.Fatalf("check example: exit %d, stderr:\n%s", code, errOut)
	}
	for _, want := range []string{
		"everything: stdio npx -y @modelcontextprotocol/server-everything stdio",
		"reconnect: 10 attempts, 500ms..30s, gives up after 2m31.5s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}

	bad := writeConfig(t, obj{"servers": obj{
		"fs":  obj{"command": "x", "args": []any{"a", 1}},
		"web": obj{"url": "https://h/mcp", "reconnect": obj{"initialDelayMs": 0}},
	}})
	code, out, errOut = runCmd(t, "check", "-config", bad)
	want := "mcpfsm check: " + bad + ": invalid config:\n" +
		"servers.fs.args[1] must be a string, not a number\n" +
		"servers.web.reconnect.initialDelayMs must be a positive number of milliseconds no greater than 2147483647\n"
	if code != exitFail || out != "" || !strings.HasPrefix(errOut, "mcpfsm check: ") {
		t.Fatalf("check bad: exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	if errOut != want {
		t.Errorf("check bad: stderr\n%s\nwant\n%s", errOut, want)
	}

	machine := writeConfig(t, obj{"mcpServers": obj{
		"gone":  obj{"command": "no-such-program-5d2"},
		"cwd":   obj{"command": "npx", "cwd": filepath.Join(bin, "missing")},
		"quiet": obj{"command": "npx", "reconnect": obj{"enabled": false, "maxAttempts": 3}, "autoApprove": []string{}},
	}})
	code, out, errOut = runCmd(t, "check", "-config", machine)
	// writeConfig sorts keys: servers and options are in alphabetical order.
	want = "mcpfsm check: " + machine + ": warning: mcpServers.quiet.autoApprove is ignored: mcpfsm does not use it (a key of Cline)\n" +
		"mcpfsm check: " + machine + `: warning: mcpServers.quiet.reconnect.maxAttempts has no effect: reconnect is disabled ("enabled": false); remove it, or enable reconnect` + "\n" +
		"mcpfsm check: server cwd: cwd " + filepath.Join(bin, "missing") + " does not exist: create it or fix the path\n" +
		`mcpfsm check: server gone: command "no-such-program-5d2" is not on mcpfsm's PATH: install it, or give its full path` + "\n"
	if code != exitFail || errOut != want || !strings.Contains(out, "3 server(s) (mcpServers layout)") {
		t.Errorf("check machine problems: exit %d, stdout:\n%s\nstderr:\n%s\nwant stderr:\n%s", code, out, errOut, want)
	}

	if code, _, _ := runCmd(t, "check"); code != exitUsage {
		t.Errorf("check without -config: exit %d, want %d", code, exitUsage)
	}
	if code, out, _ := runCmd(t, "check", "-h"); code != 0 || !strings.Contains(out, "Usage: mcpfsm check") {
		t.Errorf("check -h: exit %d, stdout:\n%s", code, out)
	}
	if code, out, _ := runCmd(t, "-h"); code != 0 || !strings.Contains(out, "mcpfsm run") {
		t.Errorf("-h: exit %d, stdout:\n%s", code, out)
	}
}

func TestToolsAndCall(t *testing.T) {
	path := writeConfig(t, obj{"servers": obj{"fix": fixtureServer(t)}})
	code, out, errOut := runCmd(t, "tools", "-config", path, "-timeout", "20s")
	if code != 0 {
		t.Fatalf("tools: exit %d, stderr:\n%s", code, errOut)
	}
	for _, want := range []string{"mcp__fix__crash  fix     replies, then exits", "mcp__fix__echo   fix     returns its text argument"} {
		if !strings.Contains(out, want) {
			t.Errorf("tools output lacks %q:\n%s", want, out)
		}
	}

	code, out, errOut = runCmd(t, "call", "-config", path, "mcp__fix__echo", `{"text": "hello there"}`)
	if code != 0 || out != "hello there\n" {
		t.Fatalf("call: exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	if code, _, errOut := runCmd(t, "call", "-config", path, "mcp__nope__echo"); code != exitUsage || !strings.Contains(errOut, "names no server") {
		t.Errorf("call unknown server: exit %d, stderr:\n%s", code, errOut)
	}
	if code, _, errOut := runCmd(t, "call", "-config", path, "mcp__fix__nope"); code != exitFail || !strings.Contains(errOut, `no tool "mcp__fix__nope"`) {
		t.Errorf("call unknown tool: exit %d, stderr:\n%s", code, errOut)
	}
	if code, _, _ := runCmd(t, "call", "-config", path, "mcp__fix__echo", `[1]`); code != exitUsage {
		t.Errorf("call with array args: exit %d", code)
	}
}

func TestToolsServerFails(t *testing.T) {
	down := fixtureServer(t, "-exit-at-start")
	down["reconnect"] = obj{"enabled": false}
	path := writeConfig(t, obj{"servers": obj{"fix": fixtureServer(t), "down": down}})
	code, out, errOut := runCmd(t, "tools", "-config", path, "-timeout", "20s")
	if code != exitFail {
		t.Fatalf("tools: exit %d, want 1; stderr:\n%s", code, errOut)
	}
	if !strings.Contains(out, "mcp__fix__echo") {
		t.Errorf("tools output lacks the working server's tools:\n%s", out)
	}
	if !strings.Contains(errOut, `mcpfsm tools: server down: mcp server "down": connection failed`) ||
		!strings.Contains(errOut, "testserver: started") {
		t.Errorf("stderr lacks the failure or the server's stderr:\n%s", errOut)
	}

	// With failOnStartupError the failure happens inside Start.
	down["failOnStartupError"] = true
	path = writeConfig(t, obj{"servers": obj{"down": down}})
	code, _, errOut = runCmd(t, "tools", "-config", path, "-timeout", "20s")
	if code != exitFail || !strings.Contains(errOut, "connection failed") {
		t.Errorf("tools failOnStartupError: exit %d, stderr:\n%s", code, errOut)
	}
}

// watcher is an io.Writer that records everything and lets a test wait
// for a substring.
type watcher struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newWatcher() *watcher { return &watcher{changed: make(chan struct{}, 1)} }

func (w *watcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	select {
	case w.changed <- struct{}{}:
	default:
	}
	return n, err
}

func (w *watcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// waitFor waits until the output has every want after offset from, in
// order, and returns the offset past the last one.
func (w *watcher) waitFor(t *testing.T, from int, want ...string) int {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		s := w.String()
		at, ok := from, true
		for _, x := range want {
			i := strings.Index(s[at:], x)
			if i < 0 {
				ok = false
				break
			}
			at += i + len(x)
		}
		if ok {
			return at
		}
		select {
		case <-w.changed:
		case <-deadline.C:
			t.Fatalf("output never showed %q after offset %d:\n%s", want, from, s)
		}
	}
}

func TestRun(t *testing.T) {
	pidlog := filepath.Join(t.TempDir(), "pids")
	path := writeConfig(t, obj{"servers": obj{"fix": fixtureServer(t, "-exit-after", "300ms", "-pidlog", pidlog)}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stdout, stderr := newWatcher(), newWatcher()
	done := make(chan int, 1)
	go func() { done <- runContext(ctx, []string{"run", "-config", path}, stdout, stderr) }()

	stdout.waitFor(t, 0, "tools (2):", "mcp__fix__crash", "mcp__fix__echo")
	at := stderr.waitFor(t, 0, "connected and registered tools", "state=established")
	stderr.waitFor(t, at, "connection lost; reconnecting", "state=lost-reconnecting from=established event=connection-lost",
		"reconnected and re-synced tools", "state=established")
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("run: exit %d, stderr:\n%s", code, stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("run did not return after cancel; stderr:\n%s", stderr)
	}
	if !strings.Contains(stderr.String(), "shutting down") {
		t.Errorf("stderr lacks shutting down:\n%s", stderr)
	}
	data, err := os.ReadFile(pidlog)
	if err != nil {
		t.Fatal(err)
	}
	pids := strings.Fields(string(data))
	if len(pids) < 2 {
		t.Errorf("want at least 2 server processes (a respawn), got %v", pids)
	}
	for _, p := range pids {
		pid, err := strconv.Atoi(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("fixture process %d still exists after run returned (kill 0: %v)", pid, err)
		}
	}
}
