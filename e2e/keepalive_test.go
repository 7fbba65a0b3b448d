package e2e_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
)

// hungCommand is the fixture's raw server that stops answering anything,
// pings included, after answering three requests other than ping
// (initialize, tools/list and one call), and then ignores stdin EOF too: a
// deadlocked server with its pipes open. Only a signal ends it; grace is
// its TerminateDuration.
func (e *env) hungCommand(grace time.Duration) (*conn.Stdio, *fixture.RequestLog) {
	cmd, log := e.rawCommand("-hang-after", "3", "-ignore-eof")
	cmd.TerminateDuration = grace
	return cmd, log
}

// TestKeepAliveDetectsHungServer: with KeepAlive the SDK pings the server;
// an unanswered ping closes the session, the supervisor reports the loss
// and reconnects to a fresh process.
func TestKeepAliveDetectsHungServer(t *testing.T) {
	const keepAlive = 50 * time.Millisecond
	e := newEnv(t)
	cmd, log := e.hungCommand(50 * time.Millisecond)
	e.start(conn.Config{Transport: cmd, Reconnect: fast(100), KeepAlive: keepAlive})
	e.rec.Await(t, wait, conn.Established)
	first := e.starts.await(t, wait)
	e.mustEcho("last answer") // the third request: the server hangs now
	hung := time.Now()

	lost := e.rec.Await(t, wait, conn.LostReconnecting)
	detected := time.Since(hung)
	t.Logf("hang detected after %v: %v", detected, lost.Err)
	var lerr *conn.LostError
	if !errors.As(lost.Err, &lerr) {
		t.Errorf("loss carries %T %v, want a *conn.LostError", lost.Err, lost.Err)
	}
	// A ping every interval, each given half an interval to answer, plus
	// the close barrier (one grace period before SIGTERM).
	if detected > 2*time.Second {
		t.Errorf("hang detected after %v, want within a few keep-alive intervals of %v", detected, keepAlive)
	}
	e.rec.Await(t, wait, conn.Connecting)
	e.rec.Await(t, wait, conn.Established)
	second := e.starts.await(t, wait)
	if second == first {
		t.Fatalf("reconnected to the same process %d", first)
	}
	if alive(first) {
		t.Errorf("hung process %d alive after the reconnect", first)
	}
	e.mustEcho("fresh process") // the fresh process hangs after this too; Close handles it
	var pings int
	for _, r := range log.Requests() {
		if r == "ping" {
			pings++
		}
	}
	if pings == 0 {
		t.Errorf("the server saw no ping: %q", log.Requests())
	}
}

// TestHungServerWithoutKeepAlive: without KeepAlive nothing notices a hung
// server, but no call hangs: each fails by its deadline (the caller's, or
// CallTimeout) with context.DeadlineExceeded, and Close still kills the
// server promptly.
func TestHungServerWithoutKeepAlive(t *testing.T) {
	const (
		callTimeout = 300 * time.Millisecond
		callerLimit = 200 * time.Millisecond
		grace       = 50 * time.Millisecond
	)
	e := newEnv(t)
	cmd, _ := e.hungCommand(grace)
	sup := e.start(conn.Config{Transport: cmd, Reconnect: fast(3), CallTimeout: callTimeout})
	e.rec.Await(t, wait, conn.Established)
	e.mustEcho("last answer") // the server hangs now
	echo := conn.PublicToolName("fx", "echo")

	for _, tc := range []struct {
		name  string
		limit time.Duration // the caller's deadline
		want  time.Duration // when the call should fail
	}{
		{"caller-deadline", callerLimit, callerLimit},
		{"CallTimeout", wait, callTimeout},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), tc.limit)
		start := time.Now()
		_, err := callText(ctx, e.reg, echo, map[string]any{"text": "anyone?"})
		took := time.Since(start)
		cancel()
		t.Logf("%s: call failed after %v: %v", tc.name, took, err)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: call returned %v, want an error matching context.DeadlineExceeded", tc.name, err)
		}
		if took < tc.want || took > tc.want+time.Second {
			t.Errorf("%s: call failed after %v, want just after %v", tc.name, took, tc.want)
		}
	}
	// Nothing noticed the hang: the generation is still the first one.
	if s := sup.State(); s != conn.Established {
		t.Errorf("state %s, want established: without KeepAlive a hang is not a loss", s)
	}
	if n := e.rec.Count(conn.LostReconnecting); n != 0 {
		t.Errorf("%d losses without KeepAlive:\n%s", n, e.rec.Dump())
	}
	// The server ignores stdin EOF: Close needs SIGTERM, one grace period.
	closePromptly(t, e, sup)
}
