package e2e_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
)

// callOutcome is one tool call's error and how long it took.
type callOutcome struct {
	took time.Duration
	err  error
}

// callConcurrently makes callers x perCaller calls of echo with text, and
// returns every outcome. It fails t if the calls are not all done within
// wait: a call that outlives its deadline is the bug these tests look for.
func callConcurrently(t *testing.T, e *env, callers, perCaller int, text string) []callOutcome {
	t.Helper()
	echo := conn.PublicToolName("fx", "echo")
	out := make(chan callOutcome, callers*perCaller)
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perCaller {
				start := time.Now()
				_, err := callText(context.Background(), e.reg, echo, map[string]any{"text": text})
				out <- callOutcome{time.Since(start), err}
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatalf("%d calls not done within %v: a call outlived its deadline", callers*perCaller-len(out), wait)
	}
	close(out)
	var all []callOutcome
	for o := range out {
		all = append(all, o)
	}
	return all
}

// TestStoppedServerEndsCallsAndIsKilled: a SIGSTOPped server reads
// nothing, so calls of 256 KiB fill its stdin pipe. The keep-alive ping,
// stuck behind them, fails within two intervals; the calls end at once
// with ErrUnavailable saying why; the stopped process is SIGKILLed within
// CloseTimeout (SIGTERM does not act on a stopped process), and a fresh
// one serves calls.
func TestStoppedServerEndsCallsAndIsKilled(t *testing.T) {
	const (
		keepAlive    = 200 * time.Millisecond
		callTimeout  = time.Second
		closeTimeout = 2 * time.Second
	)
	e := newEnv(t)
	e.start(conn.Config{Transport: e.command(), Reconnect: fast(100), KeepAlive: keepAlive,
		CallTimeout: callTimeout, CloseTimeout: closeTimeout})
	e.rec.Await(t, wait, conn.Established)
	pid := e.starts.await(t, wait)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()

	for i, o := range callConcurrently(t, e, 4, 1, strings.Repeat("x", 256<<10)) {
		t.Logf("call %d: %v after %v", i, o.err, o.took)
		if !errors.Is(o.err, conn.ErrUnavailable) && !errors.Is(o.err, context.DeadlineExceeded) {
			t.Errorf("call %d: %v, want ErrUnavailable or DeadlineExceeded", i, o.err)
		}
		if errors.Is(o.err, conn.ErrUnavailable) && !strings.Contains(o.err.Error(), "keep-alive") {
			t.Errorf("call %d: %q does not say the keep-alive ended it", i, o.err)
		}
		if o.took > callTimeout+2*slack {
			t.Errorf("call %d took %v, beyond CallTimeout %v", i, o.took, callTimeout)
		}
	}
	lost := e.rec.Await(t, wait, conn.LostReconnecting)
	took := time.Since(stopped)
	t.Logf("loss after %v: %v", took, lost.Err)
	if !strings.Contains(lost.Err.Error(), "keep-alive") {
		t.Errorf("loss %v, want the keep-alive's news", lost.Err)
	}
	// Two intervals to notice, then the process group is killed within
	// CloseTimeout.
	if limit := 2*keepAlive + closeTimeout + time.Second; took > limit {
		t.Errorf("loss reported after %v, want within %v", took, limit)
	}
	if alive(pid) {
		t.Errorf("stopped server %d alive after its generation was released", pid)
	}
	e.rec.Await(t, wait, conn.Established)
	e.mustEcho("fresh process")
}

// TestServerThatStopsReadingNeverHoldsACall: a server that answers
// initialize and tools/list and then reads nothing more (alive, ignoring
// SIGTERM), no KeepAlive: 16 callers make 256 calls of ~1 KiB, several
// times what the pipe holds. Every call ends by CallTimeout, and Close
// kills the server within CloseTimeout.
func TestServerThatStopsReadingNeverHoldsACall(t *testing.T) {
	const (
		callTimeout  = 200 * time.Millisecond
		closeTimeout = time.Second
	)
	e := newEnv(t)
	sup := e.start(conn.Config{Transport: e.command("-hang-after", "2", "-hang-no-read", "-ignore-sigterm"),
		Reconnect: fast(3), CallTimeout: callTimeout, CloseTimeout: closeTimeout})
	e.rec.Await(t, wait, conn.Established)
	pid := e.starts.await(t, wait)

	var slowest time.Duration
	for _, o := range callConcurrently(t, e, 16, 16, strings.Repeat("y", 1000)) {
		slowest = max(slowest, o.took)
		if !errors.Is(o.err, context.DeadlineExceeded) {
			t.Errorf("call: %v, want DeadlineExceeded", o.err)
		}
	}
	t.Logf("slowest call %v", slowest)
	if slowest > callTimeout+2*slack {
		t.Errorf("slowest call took %v, beyond CallTimeout %v", slowest, callTimeout)
	}
	start := time.Now()
	if err := sup.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
	took := time.Since(start)
	t.Logf("Close took %v", took)
	if took > closeTimeout {
		t.Errorf("Close took %v, beyond CloseTimeout %v", took, closeTimeout)
	}
	if alive(pid) {
		t.Errorf("server %d alive after Close", pid)
	}
}
