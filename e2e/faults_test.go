package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/policy"
)

func TestCrashRecoversWithIdenticalTools(t *testing.T) {
	e := newEnv(t)
	e.start(conn.Config{Transport: e.command(), Reconnect: fast(3)})
	e.rec.Await(t, wait, conn.Established)
	before := e.reg.Tools()
	if len(before) != 2 {
		t.Fatalf("registered %d tools, want 2 (echo, crash)", len(before))
	}
	e.mustEcho("before")

	e.crash()
	lost := e.rec.Await(t, wait, conn.LostReconnecting)
	var lerr *conn.LostError
	if !errors.As(lost.Err, &lerr) {
		t.Errorf("loss carries %T %v, want a *conn.LostError", lost.Err, lost.Err)
	}
	e.rec.Await(t, wait, conn.Connecting)
	e.rec.Await(t, wait, conn.Established)
	e.mustEcho("after")

	if diff := cmp.Diff(before, e.reg.Tools(), cmpopts.IgnoreUnexported(conn.Tool{})); diff != "" {
		t.Errorf("tools changed across the crash (-before +after):\n%s", diff)
	}
	pids := e.pids()
	if len(pids) != 2 {
		t.Fatalf("pidlog has %d processes, want 2", len(pids))
	}
	if alive(pids[0]) {
		t.Errorf("crashed process %d still alive", pids[0])
	}
}

func TestCloseDuringOutageIsPrompt(t *testing.T) {
	slow := &policy.Policy{Enabled: true, InitialDelay: time.Minute, MaxDelay: time.Minute, MaxAttempts: 3}
	t.Run("backoff", func(t *testing.T) {
		e := newEnv(t)
		sup := e.start(conn.Config{Transport: e.command(), Reconnect: slow})
		e.rec.Await(t, wait, conn.Established)
		e.crash()
		e.rec.Await(t, wait, conn.LostReconnecting)
		closePromptly(t, e, sup)
	})
	t.Run("attempt-in-flight", func(t *testing.T) {
		e := newEnv(t)
		sup := e.start(conn.Config{Transport: e.command("-no-init"), Reconnect: slow})
		e.starts.await(t, wait) // the attempt's process runs and will never answer
		closePromptly(t, e, sup)
	})
}

func closePromptly(t *testing.T, e *env, sup *conn.Supervisor) {
	t.Helper()
	start := time.Now()
	if err := sup.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	took := time.Since(start)
	t.Logf("Close took %v", took)
	if took > 2*slack {
		t.Errorf("Close took %v, want well under the minute of backoff", took)
	}
	if s := sup.State(); s != conn.Disposed {
		t.Errorf("state after Close: %s", s)
	}
	pids := e.pids()
	if len(pids) == 0 {
		t.Fatal("no process was started")
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d alive after Close", pid)
		}
	}
}

func TestCrashLoopExhaustsAfterMaxAttempts(t *testing.T) {
	const attempts = 3
	for _, tc := range []struct {
		name     string
		flags    []string
		policy   *policy.Policy
		protocol string // conn.Config.ProtocolVersion
	}{
		{"exit-at-start", []string{"-exit-at-start"}, fast(attempts), ""},
		// Brief successes: every process lives 20 ms, well inside the 1 s
		// stability window, so the uptime never resets the budget. The
		// classic handshake is pinned: on a loaded machine a process that
		// lives 20 ms can die during the server/discover probe, and the
		// supervisor would then learn the handshake with one more process.
		{"exit-after-20ms", []string{"-exit-after", "20ms"},
			&policy.Policy{Enabled: true, InitialDelay: 10 * time.Millisecond, MaxDelay: time.Second, MaxAttempts: attempts},
			conn.ClassicProtocolVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			sup := e.start(conn.Config{Transport: e.command(tc.flags...), Reconnect: tc.policy, ProtocolVersion: tc.protocol})
			last := e.rec.Await(t, wait, conn.Exhausted)
			if got := e.rec.Count(conn.Connecting); got != attempts {
				t.Errorf("%d reconnect attempts, want exactly %d:\n%s", got, attempts, e.rec.Dump())
			}
			if last.Attempt != attempts || last.MaxAttempts != attempts {
				t.Errorf("exhausted at attempt %d/%d, want %d/%d", last.Attempt, last.MaxAttempts, attempts, attempts)
			}
			want := attempts + 1
			if tc.name == "exit-at-start" {
				// The first process died on the server/discover probe: the
				// supervisor learned the classic handshake and started one
				// more process within that attempt (never two at once).
				want++
			}
			if n := len(e.pids()); n != want {
				t.Errorf("%d processes started, want %d (initial, + 1 to learn the handshake, + %d reconnects)", n, want, attempts)
			}
			st := sup.Status()
			if len(st.Tools) != 0 || len(e.reg.Tools()) != 0 {
				t.Errorf("tools registered after exhaustion: %v", st.Tools)
			}
			if st.LastErr == nil {
				t.Error("Status.LastErr is nil after exhaustion")
			}
			// Exhausted is final until Close: no further process starts.
			for _, pid := range e.pids() {
				waitGone(t, pid, wait)
			}
			if got := e.rec.Count(conn.Connecting); got != attempts {
				t.Errorf("an attempt started after exhaustion: %d", got)
			}
		})
	}
}

func TestNoInitializeAnswerFailsAfterConnectTimeout(t *testing.T) {
	e := newEnv(t)
	const timeout = 200 * time.Millisecond
	start := time.Now()
	sup := e.start(conn.Config{Transport: e.command("-no-init"), Reconnect: disabled(), ConnectTimeout: timeout})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err := sup.Ready(ctx)
	took := time.Since(start)
	t.Logf("attempt failed after %v: %v", took, err)
	var ferr *conn.FailedError
	if !errors.As(err, &ferr) {
		t.Fatalf("Ready: %T %v, want a *conn.FailedError", err, err)
	}
	if !strings.Contains(err.Error(), "ConnectTimeout") {
		t.Errorf("error %q does not name ConnectTimeout", err)
	}
	if took < timeout || took > timeout+2*time.Second {
		t.Errorf("attempt failed after %v, want just after %v", took, timeout)
	}
	e.rec.Await(t, wait, conn.FailedDisabled)
	for _, pid := range e.pids() {
		waitGone(t, pid, wait)
	}
}

func TestServerIgnoringSIGTERMAndEOFIsKilled(t *testing.T) {
	e := newEnv(t)
	const grace = 100 * time.Millisecond
	cmd := e.command("-ignore-sigterm", "-ignore-eof")
	cmd.TerminateDuration = grace
	sup := e.start(conn.Config{Transport: cmd, Reconnect: fast(3)})
	e.rec.Await(t, wait, conn.Established)
	e.mustEcho("stubborn")
	start := time.Now()
	if err := sup.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v, want nil: SIGKILL works", err)
	}
	took := time.Since(start)
	t.Logf("Close took %v", took)
	if took < 2*grace {
		t.Errorf("Close took %v: the server did not ignore EOF and SIGTERM, the test proves nothing", took)
	}
	if took > 2*grace+time.Second {
		t.Errorf("Close took %v, want about %v", took, 2*grace)
	}
	for _, pid := range e.pids() {
		if alive(pid) {
			t.Errorf("process %d alive after Close", pid)
		}
	}
}

func TestWrapperGrandchildNeverSurvives(t *testing.T) {
	e := newEnv(t)
	pidfile := filepath.Join(e.dir, "grandchild")
	// The server is a plain child of sh (not exec'd), and it starts a
	// grandchild of its own: signals to sh alone would reach neither.
	script := fmt.Sprintf("%q -grandchild -pidfile %q -pidlog %q; true", e.bin, pidfile, e.pidlog)
	sup := e.start(conn.Config{Transport: conn.Command("sh", "-c", script), Reconnect: fast(3)})
	grandchild := func() int {
		t.Helper()
		data, err := os.ReadFile(pidfile)
		if err != nil {
			t.Fatalf("grandchild pidfile: %v", err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			t.Fatalf("grandchild pidfile: %v", err)
		}
		if !alive(pid) {
			t.Fatalf("grandchild %d is not running: the fixture is broken", pid)
		}
		return pid
	}

	e.rec.Await(t, wait, conn.Established)
	first := grandchild()
	e.crash()
	e.rec.Await(t, wait, conn.LostReconnecting)
	// The close barrier ran before the loss was reported.
	waitGone(t, first, time.Second)
	e.rec.Await(t, wait, conn.Established)
	second := grandchild()
	if second == first {
		t.Fatalf("restart did not start a new grandchild")
	}
	e.mustEcho("wrapped")
	if err := sup.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	waitGone(t, second, time.Second)
}

// TestNeverTwoServerProcesses checks, whenever an attempt starts, that
// every process started before it has exited.
func TestNeverTwoServerProcesses(t *testing.T) {
	e := newEnv(t)
	var (
		mu         sync.Mutex
		violations []string
		snapshot   []int
		checks     int
	)
	deadOrReport := func(when string, pids []int) {
		for _, pid := range pids {
			if alive(pid) {
				violations = append(violations, fmt.Sprintf("%s: process %d still alive", when, pid))
			}
		}
	}
	check := func(tr conn.Transition) { // on the supervisor's loop, before the recorder sees tr
		mu.Lock()
		defer mu.Unlock()
		switch tr.To {
		case conn.LostReconnecting, conn.FailedRetrying:
			// No new attempt has started yet: every logged process is old.
			snapshot = readPIDs(t, e.pidlog)
			deadOrReport("entering "+string(tr.To), snapshot)
		case conn.Connecting:
			checks++
			deadOrReport("entering connecting", snapshot)
		}
	}
	e.start(conn.Config{Transport: e.command(), Reconnect: fast(100),
		OnTransition: func(tr conn.Transition) { check(tr); e.rec.OnTransition(tr) }})
	const crashes = 5
	for i := range crashes {
		e.rec.Await(t, wait, conn.Established)
		e.mustEcho(fmt.Sprint("round ", i))
		e.crash()
	}
	e.rec.Await(t, wait, conn.Established)
	mu.Lock()
	defer mu.Unlock()
	if checks != crashes {
		t.Errorf("checked %d attempts, want %d", checks, crashes)
	}
	if len(snapshot) != crashes {
		t.Errorf("last snapshot had %d processes, want %d", len(snapshot), crashes)
	}
	for _, v := range violations {
		t.Error(v)
	}
}

func TestGarbageOnStdoutFailsClearly(t *testing.T) {
	e := newEnv(t)
	sup := e.start(conn.Config{Transport: e.command("-garbage"), Reconnect: disabled()})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err := sup.Ready(ctx)
	t.Logf("error: %v", err)
	var ferr *conn.FailedError
	if !errors.As(err, &ferr) {
		t.Fatalf("Ready: %T %v, want a *conn.FailedError", err, err)
	}
	e.rec.Await(t, wait, conn.FailedDisabled)
	if n := len(e.reg.Tools()); n != 0 {
		t.Errorf("%d tools registered", n)
	}
	for _, pid := range e.pids() {
		waitGone(t, pid, wait)
	}
}

func TestDuplicateToolNamesAreAnInvalidList(t *testing.T) {
	e := newEnv(t)
	sup := e.start(conn.Config{Transport: e.command("-duplicate-tools"), Reconnect: disabled()})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err := sup.Ready(ctx)
	t.Logf("error: %v", err)
	if !errors.Is(err, conn.ErrInvalidToolList) {
		t.Fatalf("Ready: %v, want an error matching conn.ErrInvalidToolList", err)
	}
	var ferr *conn.FailedError
	if !errors.As(err, &ferr) {
		t.Errorf("Ready: %T, want a *conn.FailedError", err)
	}
	if !strings.Contains(err.Error(), `"dup"`) {
		t.Errorf("error %q does not name the duplicated tool", err)
	}
	tr := e.rec.Await(t, wait, conn.FailedDisabled)
	if !errors.Is(tr.Err, conn.ErrInvalidToolList) || !errors.Is(sup.Status().LastErr, conn.ErrInvalidToolList) {
		t.Errorf("transition error %v / LastErr %v do not match ErrInvalidToolList", tr.Err, sup.Status().LastErr)
	}
	if n := len(e.reg.Tools()); n != 0 {
		t.Errorf("%d tools registered from an invalid list", n)
	}
}

func TestHugeToolListRegisters(t *testing.T) {
	e := newEnv(t)
	const extra = 10_000
	start, cpu0 := time.Now(), cpuTime(t)
	sup := e.start(conn.Config{Transport: e.command("-tools", strconv.Itoa(extra)), Reconnect: fast(3)})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := sup.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	took, cpu := time.Since(start), cpuTime(t)-cpu0
	t.Logf("%d tools over %d pages registered in %v, %v of this process's CPU", extra+2, extra/500, took, cpu)
	// The bound is on this process's CPU time, which a loaded machine
	// does not stretch as it stretches the wall clock: a registry that
	// went quadratic in the tool count would spend minutes.
	if cpu > 5*time.Second {
		t.Errorf("registering %d tools took %v of CPU", extra, cpu)
	}
	if n := len(e.reg.Tools()); n != extra+2 {
		t.Fatalf("%d tools registered, want %d", n, extra+2)
	}
	if n := len(sup.Status().Tools); n != extra+2 {
		t.Errorf("Status lists %d tools, want %d", n, extra+2)
	}
	last := fmt.Sprintf("extra_%05d", extra-1)
	if got, err := e.call(last, map[string]any{}); err != nil || got != last {
		t.Errorf("call %s: %q, %v", last, got, err)
	}
}

var validPublic = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func TestBadToolNamesArePublishedValid(t *testing.T) {
	e := newEnv(t)
	sup := e.start(conn.Config{Transport: e.command("-bad-names"), Reconnect: fast(3)})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := sup.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	tools := e.reg.Tools()
	if len(tools) != 11 {
		t.Fatalf("%d tools registered, want 11", len(tools))
	}
	seen := map[string]string{}
	for _, tool := range tools {
		if !validPublic.MatchString(tool.Name) {
			t.Errorf("public name %q of %q is not valid", tool.Name, tool.Raw.Name)
		}
		if prev, ok := seen[tool.Name]; ok {
			t.Errorf("%q and %q share the public name %q", prev, tool.Raw.Name, tool.Name)
		}
		seen[tool.Name] = tool.Raw.Name
		if tool.Raw.Name == "echo" || tool.Raw.Name == "crash" {
			continue
		}
		// The raw name goes on the wire: the fixture answers with it.
		if got, err := callText(ctx, e.reg, tool.Name, map[string]any{}); err != nil {
			t.Errorf("call %q: %v", tool.Raw.Name, err)
		} else if got != tool.Raw.Name {
			t.Errorf("call %q reached %q", tool.Raw.Name, got)
		}
	}
}

// countingWriter counts what a flooding server writes to stderr and says
// when enough went by.
type countingWriter struct {
	n      atomic.Int64
	target int64
	once   sync.Once
	done   chan struct{}
}

func (w *countingWriter) Write(p []byte) (int, error) {
	if w.n.Add(int64(len(p))) >= w.target {
		w.once.Do(func() { close(w.done) })
	}
	return len(p), nil
}

func TestStderrFloodKeepsMemoryBounded(t *testing.T) {
	e := newEnv(t)
	const (
		flood = 256 << 20 // bytes of stderr to let through
		bound = 64 << 20  // most heap the process may hold meanwhile
	)
	w := &countingWriter{target: flood, done: make(chan struct{})}
	cmd := e.command("-stderr-flood")
	cmd.Stderr = w
	e.start(conn.Config{Transport: cmd, Reconnect: fast(3)})
	e.rec.Await(t, wait, conn.Established)

	var peak uint64
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	start := time.Now()
	for done := false; !done; {
		select {
		case <-w.done:
			done = true
		case <-tick.C:
		case <-deadline:
			t.Fatalf("only %d bytes of stderr in 30s", w.n.Load())
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc)
	}
	t.Logf("%d MiB of stderr in %v; peak heap %d MiB", w.n.Load()>>20, time.Since(start), peak>>20)
	if peak > bound {
		t.Errorf("peak heap %d MiB during the flood, want below %d MiB", peak>>20, bound>>20)
	}
	e.mustEcho("still answering")
}

func TestListChangedStormConverges(t *testing.T) {
	// On both protocol eras: list_changed arrives over the
	// subscriptions/listen stream on 2026-07-28.
	for _, version := range []string{conn.ClassicProtocolVersion, ""} {
		t.Run("version="+version, func(t *testing.T) { listChangedStormConverges(t, version) })
	}
}

func listChangedStormConverges(t *testing.T, version string) {
	e := newEnv(t)
	sup := e.start(conn.Config{Transport: e.command("-list-changed-storm", "200"), Reconnect: fast(3), ProtocolVersion: version})
	e.rec.Await(t, wait, conn.Established)
	want := []string{conn.PublicToolName("fx", "crash"), conn.PublicToolName("fx", "echo"), conn.PublicToolName("fx", "storm_done")}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(wait)
	for {
		names := sup.Status().Tools
		if dup := firstDuplicate(names); dup != "" {
			t.Fatalf("tool %q listed twice: %v", dup, names)
		}
		if slices.Contains(names, want[2]) {
			if diff := cmp.Diff(want, names); diff != "" {
				t.Fatalf("tools after the storm (-want +got):\n%s", diff)
			}
			break
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("the storm's final list never arrived; tools: %v", names)
		}
	}
	if diff := cmp.Diff(want, toolNames(e.reg.Tools())); diff != "" {
		t.Errorf("registry after the storm (-want +got):\n%s", diff)
	}
	e.mustEcho("calm")
	if n := e.rec.Count(conn.LostReconnecting); n != 0 {
		t.Errorf("the storm cost %d connections", n)
	}
}

func firstDuplicate(names []string) string {
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return n
		}
		seen[n] = true
	}
	return ""
}

func toolNames(tools []conn.Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}
