//lint:file-ignore SA1019 roots are deprecated upstream (SEP-2577) but still forwarded, and tested.

package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const limit = 30 * time.Second

// self returns a command that runs mcpfsm with args, as its own process.
func self(t *testing.T, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "MCPFSM_TEST_MAIN=1")
	return cmd
}

// frontClient is a go-sdk client of mcpfsm serve.
type frontClient struct {
	sess    *mcp.ClientSession
	changes chan struct{} // a value per tools/list_changed
	count   atomic.Int32
}

func connect(t *testing.T, tr mcp.Transport) *frontClient { return connectWith(t, tr, nil, nil) }

// connectWith connects with opts (their ToolListChangedHandler is the
// frontClient's) and sessOpts.
func connectWith(t *testing.T, tr mcp.Transport, opts *mcp.ClientOptions, sessOpts *mcp.ClientSessionOptions) *frontClient {
	t.Helper()
	return connectWithRoots(t, tr, opts, sessOpts, nil)
}

// connectWithRoots is connectWith with a client that has roots.
func connectWithRoots(t *testing.T, tr mcp.Transport, opts *mcp.ClientOptions, sessOpts *mcp.ClientSessionOptions, roots []*mcp.Root) *frontClient {
	t.Helper()
	fc := &frontClient{changes: make(chan struct{}, 100)}
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) {
		fc.count.Add(1)
		fc.changes <- struct{}{}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "front-test"}, opts)
	client.AddRoots(roots...)
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	sess, err := client.Connect(ctx, tr, sessOpts)
	if err != nil {
		t.Fatalf("connect to mcpfsm serve: %v", err)
	}
	fc.sess = sess
	return fc
}

func (fc *frontClient) tools(t *testing.T) []string {
	t.Helper()
	res, err := fc.sess.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// call calls tool with a text argument (none if text is empty); a
// protocol error fails the test.
func (fc *frontClient) call(t *testing.T, tool, text string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	args := map[string]any{}
	if text != "" {
		args["text"] = text
	}
	res, err := fc.sess.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: protocol error: %v", tool, err)
	}
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return strings.Join(out, "\n"), res.IsError
}

// lastPID is the last PID a fixture server appended to pidlog.
func lastPID(t *testing.T, pidlog string) int {
	t.Helper()
	data, err := os.ReadFile(pidlog)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(data))
	pid, err := strconv.Atoi(f[len(f)-1])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// allGone fails t unless every PID of the pidlogs has exited.
func allGone(t *testing.T, pidlogs ...string) {
	t.Helper()
	for _, pl := range pidlogs {
		data, err := os.ReadFile(pl)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range strings.Fields(string(data)) {
			pid, _ := strconv.Atoi(p)
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				ps, _ := exec.Command("ps", "-o", "pid,ppid,stat,cmd", "-p", strconv.Itoa(pid)).CombinedOutput()
				t.Errorf("server process %d is still running after mcpfsm serve exited:\n%s", pid, ps)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// backends are the fixture servers of a serve test and the files that
// steer them.
type backends struct {
	config  string // the config file
	fixLog  string // PIDs of "fix"
	onceLog string // PIDs of "once"
	block   string // while this file exists, "fix" fails every respawn
}

// serveConfig is two fixture servers: "fix", whose respawns fail while
// the block file exists, so a test decides how long its outage lasts, and
// "once", which comes up once and then fails every respawn, so that
// killing it makes it give up and its tools leave the union.
func serveConfig(t *testing.T) backends {
	dir := t.TempDir()
	b := backends{fixLog: filepath.Join(dir, "fix.pids"), onceLog: filepath.Join(dir, "once.pids"), block: filepath.Join(dir, "fix.block")}
	marker := filepath.Join(dir, "once.started")
	fix := `if [ -e "$1" ]; then exit 1; fi; exec "$2" -pidlog "$3"`
	once := `if [ -e "$1" ]; then exit 1; fi; : > "$1"; exec "$2" -pidlog "$3"`
	b.config = writeConfig(t, obj{"mcpServers": obj{
		"fix": obj{"command": "sh", "args": []string{"-c", fix, "sh", b.block, fixture.Build(t), b.fixLog},
			"reconnect": obj{"initialDelayMs": 200, "maxDelayMs": 200, "maxAttempts": 500}},
		"once": obj{"command": "sh", "args": []string{"-c", once, "sh", marker, fixture.Build(t), b.onceLog},
			"reconnect": obj{"initialDelayMs": 20, "maxDelayMs": 20, "maxAttempts": 2}},
	}})
	return b
}

// killFix blocks fix's respawns and SIGKILLs it; the returned function
// lets it come back.
func (b backends) killFix(t *testing.T) (unblock func()) {
	t.Helper()
	if err := os.WriteFile(b.block, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(lastPID(t, b.fixLog), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.Remove(b.block); err != nil {
			t.Fatal(err)
		}
	}
}

// outageText is the error result of a call of fix during its outage.
var outageText = regexp.MustCompile(`^server "fix": ((connection lost; reconnecting|connection failed; retrying) in [0-9.]+m?s|reconnecting now) \(attempt [0-9]+/500\); `)

var allTools = []string{"mcp__fix__crash", "mcp__fix__echo", "mcp__once__crash", "mcp__once__echo"}

// outage kills "fix" and "once" in turn and checks what the front client
// sees: an isError result during fix's outage, the same session and no
// list change after its recovery, and one list change when once gives up.
func outage(t *testing.T, fc *frontClient, stderr *watcher, b backends) {
	if diff := cmp.Diff(allTools, fc.tools(t)); diff != "" {
		t.Fatalf("tools (-want +got):\n%s", diff)
	}
	if text, isErr := fc.call(t, "mcp__fix__echo", "before"); isErr || text != "before" {
		t.Fatalf("call before the kill = %q, isError %v", text, isErr)
	}
	at := len(stderr.String())
	unblock := b.killFix(t)
	text, isErr := fc.call(t, "mcp__fix__echo", "during")
	if !isErr || !outageText.MatchString(text) {
		t.Errorf("call during the outage = %q, isError %v; want an error naming the server, its state and the next attempt", text, isErr)
	}
	unblock()
	stderr.waitFor(t, at, "reconnected and re-synced tools", "server=fix")
	if text, isErr := fc.call(t, "mcp__fix__echo", "after"); isErr || text != "after" {
		t.Errorf("call after recovery = %q, isError %v", text, isErr)
	}
	if diff := cmp.Diff(allTools, fc.tools(t)); diff != "" {
		t.Errorf("tools after recovery (-want +got):\n%s", diff)
	}

	if err := syscall.Kill(lastPID(t, b.onceLog), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fc.changes:
	case <-time.After(limit):
		t.Fatalf("no tools/list_changed after once gave up; stderr:\n%s", stderr)
	}
	if n := fc.count.Load(); n != 1 {
		t.Errorf("%d tools/list_changed, want 1: fix's reconnect listed the same tools", n)
	}
	if diff := cmp.Diff([]string{"mcp__fix__crash", "mcp__fix__echo"}, fc.tools(t)); diff != "" {
		t.Errorf("tools after once gave up (-want +got):\n%s", diff)
	}
}

// wait waits for cmd to exit and returns its exit code.
func wait(t *testing.T, cmd *exec.Cmd, stderr *watcher) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("mcpfsm serve did not exit; stderr:\n%s", stderr)
		return -1
	}
}

func TestServeStdio(t *testing.T) {
	b := serveConfig(t)
	cmd, stderr, fc := serveStdioProcess(t, nil, "serve", "-config", b.config)
	outage(t, fc, stderr, b)

	// The client goes away: serve stops every server and exits.
	if err := fc.sess.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if code := wait(t, cmd, stderr); code != 0 {
		t.Errorf("mcpfsm serve: exit %d, stderr:\n%s", code, stderr)
	}
	stderr.waitFor(t, 0, "the client disconnected; stopping every server")
	allGone(t, b.fixLog, b.onceLog)
}

func TestServeHTTP(t *testing.T) {
	b := serveConfig(t)
	cmd, stderr, url := serveHTTPProcess(t, b.config)
	fc := connect(t, &mcp.StreamableClientTransport{Endpoint: url})
	outage(t, fc, stderr, b)
	_ = fc.sess.Close()

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(t, cmd, stderr); code != 0 {
		t.Errorf("mcpfsm serve: exit %d, stderr:\n%s", code, stderr)
	}
	allGone(t, b.fixLog, b.onceLog)
}

// serveHTTPProcess starts mcpfsm serve -listen on a free port and returns
// it, its stderr and its MCP endpoint. It is killed at the end of the test
// if it still runs.
func serveHTTPProcess(t *testing.T, cfg string) (*exec.Cmd, *watcher, string) {
	t.Helper()
	return serveListening(t, nil, "serve", "-config", cfg, "-listen", "127.0.0.1:0", "-unauthenticated")
}

// serveStdioProcess starts mcpfsm with args (a serve over stdio), with env
// added to its environment, and connects a client to it.
func serveStdioProcess(t *testing.T, env []string, args ...string) (*exec.Cmd, *watcher, *frontClient) {
	t.Helper()
	return serveStdioProcessWith(t, env, nil, nil, args...)
}

// serveStdioProcessWith is serveStdioProcess with a client of opts and
// sessOpts (see connectWith).
func serveStdioProcessWith(t *testing.T, env []string, opts *mcp.ClientOptions, sessOpts *mcp.ClientSessionOptions, args ...string) (*exec.Cmd, *watcher, *frontClient) {
	t.Helper()
	return serveStdioProcessWithRoots(t, env, opts, sessOpts, nil, args...)
}

// serveStdioProcessWithRoots is serveStdioProcessWith with a client that
// has roots.
func serveStdioProcessWithRoots(t *testing.T, env []string, opts *mcp.ClientOptions, sessOpts *mcp.ClientSessionOptions, roots []*mcp.Root, args ...string) (*exec.Cmd, *watcher, *frontClient) {
	t.Helper()
	cmd := self(t, args...)
	cmd.Env = append(cmd.Env, env...)
	stderr := newWatcher()
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killAtEnd(t, cmd)
	return cmd, stderr, connectWithRoots(t, &mcp.IOTransport{Reader: stdout, Writer: stdin}, opts, sessOpts, roots)
}

// killAtEnd kills cmd at the end of the test if it still runs.
func killAtEnd(t *testing.T, cmd *exec.Cmd) {
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
}
