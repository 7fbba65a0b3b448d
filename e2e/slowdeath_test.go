package e2e_test

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/policy"
)

// TestSlowDeathsDoNotLaunderTheBudget: the outage budget counts uptime to
// the moment the connection is first known bad, not to the release of its
// generation. Each server below is bad at once, but its release takes
// longer than the stability window (MaxDelay); the budget must still
// exhaust after exactly MaxAttempts reconnects.
func TestSlowDeathsDoNotLaunderTheBudget(t *testing.T) {
	const attempts = 3
	for _, tc := range []struct {
		name      string
		flags     []string
		window    time.Duration // MaxDelay
		keepAlive time.Duration
		wantErr   string
	}{
		// EOF right after tools/list; the release waits for two grace
		// periods (400 ms) and the SIGKILL.
		{"closes-stdout", []string{"-close-stdout-after", "2", "-ignore-eof", "-ignore-sigterm"}, 300 * time.Millisecond, 0, "connection lost"},
		// Hangs right after tools/list: the first ping (150 ms) is never
		// answered; the failure is known at 300 ms, past the window, but
		// the connection was not known good since its tools were listed.
		{"hangs", []string{"-hang-after", "2", "-ignore-eof", "-ignore-sigterm"}, 250 * time.Millisecond, 150 * time.Millisecond, "keep-alive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			cmd := e.command(tc.flags...)
			cmd.TerminateDuration = 200 * time.Millisecond
			p := &policy.Policy{Enabled: true, InitialDelay: 10 * time.Millisecond, MaxDelay: tc.window, MaxAttempts: attempts}
			e.start(conn.Config{Transport: cmd, Reconnect: p, KeepAlive: tc.keepAlive})
			e.rec.Await(t, wait, conn.Exhausted)
			var losses []int
			for _, tr := range e.rec.All() {
				if tr.To == conn.LostReconnecting {
					losses = append(losses, tr.Attempt)
					if !strings.Contains(tr.Err.Error(), tc.wantErr) {
						t.Errorf("loss %v, want %q in it", tr.Err, tc.wantErr)
					}
				}
			}
			if len(losses) != attempts || losses[0] != 1 || losses[attempts-1] != attempts {
				t.Errorf("losses charged attempts %v, want 1..%d; transitions:\n%s", losses, attempts, e.rec.Dump())
			}
			if n := e.rec.Count(conn.Established); n != attempts+1 {
				t.Errorf("%d connections, want %d", n, attempts+1)
			}
		})
	}
}

// holderPIDs reads and kills, at cleanup, the processes the fixture's
// -setsid-holder started: they left the process group, so no group kill
// reaches them.
func holderPIDs(t *testing.T, e *env) string {
	path := filepath.Join(e.dir, "holders")
	t.Cleanup(func() {
		for _, pid := range readPIDs(t, path) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			waitGone(t, pid, wait)
		}
	})
	return path
}

// TestLeaderExitIsALossWhateverHoldsStdout: the server exits right after
// answering tools/list, but a process it started in a session of its own
// still holds its stdout, so the pipe never reaches EOF. The supervisor
// reaps the server: its exit is the loss.
func TestLeaderExitIsALossWhateverHoldsStdout(t *testing.T) {
	e := newEnv(t)
	holders := holderPIDs(t, e)
	e.start(conn.Config{Transport: e.command("-exit-after-answers", "2", "-setsid-holder", holders), Reconnect: disabled()})
	e.rec.Await(t, wait, conn.Established)
	pid := e.starts.await(t, wait)
	lost := e.rec.Await(t, wait, conn.LostDisabled)
	t.Logf("loss: %v", lost.Err)
	if alive(pid) {
		t.Errorf("server %d alive after its loss", pid)
	}
	if hs := readPIDs(t, holders); len(hs) != 1 || !alive(hs[0]) {
		t.Errorf("holder %v not alive: the test did not hold the pipe", hs)
	}
	// The loss is not the pipe's EOF: the last good tools stay registered
	// and fail fast.
	if _, err := e.call("echo", map[string]any{"text": "gone"}); err == nil {
		t.Error("call to an exited server succeeded")
	}
}

// TestGrandchildHoldingStderrDoesNotHalt: with Stdio.Stderr a Go writer
// (copied by the supervisor), a process outside the group that keeps
// stderr open must not hold the close barrier: the server's crash is a
// loss and a reconnect, never halted, and Close returns nil.
func TestGrandchildHoldingStderrDoesNotHalt(t *testing.T) {
	e := newEnv(t)
	holders := holderPIDs(t, e)
	cmd := e.command("-setsid-holder", holders)
	cmd.TerminateDuration = 100 * time.Millisecond
	sup := e.start(conn.Config{Transport: cmd, Reconnect: fast(3), CloseTimeout: time.Second})
	e.rec.Await(t, wait, conn.Established)
	e.crash()
	e.rec.Await(t, wait, conn.LostReconnecting)
	e.rec.Await(t, wait, conn.Established)
	e.mustEcho("after the crash")
	if err := sup.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
	if n := e.rec.Count(conn.Halted); n != 0 {
		t.Errorf("halted %d times:\n%s", n, e.rec.Dump())
	}
	if hs := readPIDs(t, holders); len(hs) != 2 {
		t.Errorf("holders %v, want one per server process", hs)
	}
}
