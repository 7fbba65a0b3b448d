package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// wait is the deadline for one awaited event. Events normally arrive within
// milliseconds; the margin is for loaded CI machines and -race.
const wait = 15 * time.Second

// slack is what a loaded 2-core machine may add to a bound on wall-clock
// time (a measured interval, a call's return). The exact bounds (a call
// returns by its deadline, a hung server is lost within two keep-alive
// intervals, Close is prompt) are checked on simulated time, by conn/sim
// and fsm_test; here a bound only tells a late event from one that
// waited for the wrong thing (a backoff, CallTimeout, the SDK's own
// timeouts), so it leaves a second for scheduling.
const slack = time.Second

// fast is a reconnect policy with short delays; its stability window
// (MaxDelay) is 50 ms.
func fast(attempts int) *policy.Policy {
	return &policy.Policy{Enabled: true, InitialDelay: 10 * time.Millisecond, MaxDelay: 50 * time.Millisecond, MaxAttempts: attempts}
}

// disabled is a policy that never retries.
func disabled() *policy.Policy {
	p := fast(1)
	p.Enabled = false
	return p
}

// starts is a Stdio.Stderr writer that reports every "testserver: started
// PID" line the fixture prints when a process starts.
type starts struct {
	mu  sync.Mutex
	buf []byte
	ch  chan int
}

func newStarts() *starts { return &starts{ch: make(chan int, 1024)} }

func (s *starts) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			if len(s.buf) > 64<<10 {
				s.buf = s.buf[:0] // not ours: a flood
			}
			return len(p), nil
		}
		line := string(s.buf[:i])
		s.buf = s.buf[i+1:]
		if rest, ok := strings.CutPrefix(line, "testserver: started "); ok {
			if pid, err := strconv.Atoi(rest); err == nil {
				select {
				case s.ch <- pid:
				default:
				}
			}
		}
	}
}

// await returns the PID of the next process that started.
func (s *starts) await(t testing.TB, d time.Duration) int {
	t.Helper()
	select {
	case pid := <-s.ch:
		return pid
	case <-time.After(d):
		t.Fatalf("no server process started within %v", d)
		return 0
	}
}

// env is one supervisor of fixture server processes.
type env struct {
	t      *testing.T
	bin    string
	dir    string
	pidlog string
	reg    *conn.ToolRegistry
	rec    *conntest.Recorder
	starts *starts
	sup    *conn.Supervisor
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	bin := fixture.Build(t)
	// Registered first, so it runs last, after every Close.
	t.Cleanup(func() { noFixtureLeft(t, bin) })
	return &env{
		t:      t,
		bin:    bin,
		dir:    dir,
		pidlog: filepath.Join(dir, "pids"),
		reg:    conn.NewRegistry(),
		rec:    conntest.NewRecorder(),
		starts: newStarts(),
	}
}

// command is the fixture with -pidlog and extra flags, its stderr watched
// for process starts.
func (e *env) command(flags ...string) *conn.Stdio {
	s := conn.Command(e.bin, append([]string{"-pidlog", e.pidlog}, flags...)...)
	s.Stderr = e.starts
	return s
}

// start starts a supervisor; cfg's Name, Registry, Logger and OnTransition
// are filled in unless set. Cleanup closes it and checks that every server
// process it started is gone.
func (e *env) start(cfg conn.Config) *conn.Supervisor {
	e.t.Helper()
	if cfg.Name == "" {
		cfg.Name = "fx"
	}
	if cfg.Registry == nil {
		cfg.Registry = e.reg
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.OnTransition == nil {
		cfg.OnTransition = e.rec.OnTransition
	}
	sup, err := conn.Start(context.Background(), cfg)
	if err != nil {
		e.t.Fatalf("Start: %v", err)
	}
	e.sup = sup
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := sup.Close(ctx); err != nil {
			e.t.Errorf("Close: %v", err)
		}
		if n := len(e.reg.Tools()); n != 0 {
			e.t.Errorf("%d tools still registered after Close", n)
		}
		for _, pid := range e.pids() {
			if alive(pid) {
				e.t.Errorf("server process %d is alive after Close returned", pid)
			}
		}
	})
	return sup
}

// pids returns the PIDs the fixture processes appended to the pidlog.
func (e *env) pids() []int { return readPIDs(e.t, e.pidlog) }

func readPIDs(t testing.TB, path string) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("read pids: %v", err)
	}
	var out []int
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file %s: %v", path, err)
		}
		out = append(out, pid)
	}
	return out
}

// alive reports whether pid names a process that has not exited. A zombie
// (exited, not yet reaped by whoever adopted it) counts as exited: it runs
// no code and holds no pipes.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return false
	}
	return true
}

// waitGone waits until pid has exited; polling is the only way to learn
// that about a process that is not our child.
func waitGone(t testing.TB, pid int, d time.Duration) {
	t.Helper()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(d)
	for alive(pid) {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("process %d still alive after %v", pid, d)
		}
	}
}

// call calls a tool by its raw name on server "fx" (or the env's
// supervisor name) and returns the text of the first content.
func (e *env) call(raw string, args any) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	return callText(ctx, e.reg, conn.PublicToolName(e.sup.Status().Server, raw), args)
}

func callText(ctx context.Context, reg *conn.ToolRegistry, public string, args any) (string, error) {
	res, err := reg.Call(ctx, public, args)
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", fmt.Errorf("tool error: %v", contentText(res))
	}
	return contentText(res), nil
}

func contentText(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return fmt.Sprintf("%T", res.Content[0])
}

// mustEcho calls echo and checks the answer.
func (e *env) mustEcho(text string) {
	e.t.Helper()
	got, err := e.call("echo", map[string]any{"text": text})
	if err != nil {
		e.t.Fatalf("echo: %v", err)
	}
	if got != text {
		e.t.Fatalf("echo %q returned %q", text, got)
	}
}

// crash calls the crash tool, which replies and then exits the server.
func (e *env) crash() {
	e.t.Helper()
	if _, err := e.call("crash", map[string]any{}); err != nil {
		e.t.Fatalf("crash: %v", err)
	}
}

// noFixtureLeft fails t if any process still runs the fixture binary bin:
// every test must end with every server process, and everything those
// started, gone.
func noFixtureLeft(t testing.TB, bin string) {
	t.Helper()
	for _, pid := range fixtureProcesses(t, bin) {
		t.Errorf("fixture process %d is still alive after the test", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL) // do not poison the next test
	}
}

// fixtureProcesses returns the live processes whose program is bin.
func fixtureProcesses(t testing.TB, bin string) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("scan processes: %v", err)
	}
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue // gone meanwhile
		}
		if prog, _, _ := bytes.Cut(cmdline, []byte{0}); string(prog) == bin && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}
