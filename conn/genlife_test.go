package conn_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfsm/mcpfsm/conn"
)

// The generation machine's table tests: each drives a real supervisor on
// the fake clock and reads the steps its generations take
// (conn.ObserveSteps) beside the connection machine's transitions.

func TestGenerationTableValidates(t *testing.T) {
	if err := conn.GenerationTable().Validate(); err != nil {
		t.Fatal(err)
	}
	// Only release ends a generation, and every way out of the open
	// states goes through the close barrier.
	var terminal []conn.GenState
	for _, st := range conn.GenerationTable().States {
		if st.Terminal {
			terminal = append(terminal, st.Name)
		}
	}
	if diff := cmp.Diff([]conn.GenState{conn.GenReleased}, terminal); diff != "" {
		t.Errorf("terminal states (-want +got):\n%s", diff)
	}
	for _, e := range conn.GenerationTable().Flatten() {
		if e.To == conn.GenReleased && e.From != conn.GenClosing && e.From != conn.GenExpired {
			t.Errorf("%s --%s--> released skips the close barrier", e.From, e.Event)
		}
	}
}

// nextGens reads the next n generation steps.
func (r *connRun) nextGens(n int) []string {
	r.t.Helper()
	out := make([]string, n)
	for i := range out {
		out[i] = r.nextGen()
	}
	return out
}

// TestGenerationCloseBarrier: a failed attempt whose process has not
// exited holds the supervisor in connecting, with no replacement opened;
// the release reports the failure, and only then does the backoff start.
func TestGenerationCloseBarrier(t *testing.T) {
	r := newConnRun(t, coveragePolicy, []connStep{{Event: conn.EventAttemptFailed, When: "not released"}})
	r.held = waitFor(t, r.srv.HeldTransports(), "the held transport")
	<-r.held.Terminated()
	if diff := cmp.Diff([]string{"connecting --close--> closing"}, r.nextGens(1)); diff != "" {
		t.Fatalf("generation steps (-want +got):\n%s", diff)
	}
	r.rec.NoTransition(t) // still connecting: the barrier holds
	if got := r.srv.Opens(); got != 1 {
		t.Errorf("%d transports opened behind the barrier, want 1", got)
	}
	r.held.Release()
	if diff := cmp.Diff([]string{"closing --release--> released"}, r.nextGens(1)); diff != "" {
		t.Errorf("generation steps (-want +got):\n%s", diff)
	}
	r.expect(conn.FailedRetrying)
}

// TestGenerationExpiry: CloseTimeout passes with the process still there:
// expired reports the failure unreleased (halted); the late release moves
// expired to released and wakes the halted supervisor, which logs it.
func TestGenerationExpiry(t *testing.T) {
	r := newConnRun(t, coveragePolicy, []connStep{{Event: conn.EventAttemptFailed, When: "not released"}})
	r.held = waitFor(t, r.srv.HeldTransports(), "the held transport")
	<-r.held.Terminated()
	r.clk.Add(conn.DefaultCloseTimeout - time.Millisecond)
	r.rec.NoTransition(t)
	r.clk.Add(time.Millisecond)
	r.expect(conn.Halted)
	if diff := cmp.Diff([]string{"connecting --close--> closing", "closing --expire--> expired"}, r.nextGens(2)); diff != "" {
		t.Fatalf("generation steps (-want +got):\n%s", diff)
	}
	r.held.Release()
	if diff := cmp.Diff([]string{"expired --release--> released"}, r.nextGens(1)); diff != "" {
		t.Errorf("generation steps (-want +got):\n%s", diff)
	}
	r.rec.WaitLog(t, waitLimit, slog.LevelInfo, "the server process that halted reconnecting has exited")
}

// TestGenerationLossAfterRelease: a lost session is reported once its
// process is gone, with the uptime ending when it went bad.
func TestGenerationLossAfterRelease(t *testing.T) {
	r := newConnRun(t, coveragePolicy, []connStep{{Event: conn.EventConnected}, {Event: conn.EventConnectionLost, When: "not released"}})
	r.held = waitFor(t, r.srv.HeldTransports(), "the held transport")
	r.expect(conn.Established)
	if diff := cmp.Diff([]string{"connecting --connected--> up"}, r.nextGens(1)); diff != "" {
		t.Fatalf("generation steps (-want +got):\n%s", diff)
	}
	r.srv.Crash()
	if diff := cmp.Diff([]string{"up --went-bad--> bad", "bad --close--> closing"}, r.nextGens(2)); diff != "" {
		t.Fatalf("generation steps (-want +got):\n%s", diff)
	}
	<-r.held.Terminated()
	r.rec.NoTransition(t) // established until the barrier decides
	r.held.Release()
	if diff := cmp.Diff([]string{"closing --release--> released"}, r.nextGens(1)); diff != "" {
		t.Errorf("generation steps (-want +got):\n%s", diff)
	}
	r.expect(conn.LostReconnecting)
}

// TestGenerationFirstBadNewsWins: a keep-alive ping goes unanswered, and
// the shutdown it starts ends the session: one went-bad, the ping's, and
// the loss names the ping.
func TestGenerationFirstBadNewsWins(t *testing.T) {
	const keepAlive = 5 * time.Second
	r := newConnRunWith(t, coveragePolicy, nil, false, func(c *conn.Config) { c.KeepAlive = keepAlive })
	r.expect(conn.Established)
	thaw := r.srv.Freeze()
	defer thaw()
	r.clk.Add(keepAlive) // the ping is sent
	waitFor(t, r.srv.Stalled(), "the ping at the frozen server")
	r.clk.Add(keepAlive) // and gets no answer
	tr := r.rec.Expect(t, waitLimit, conn.LostReconnecting)[0]
	if !strings.Contains(tr.Err.Error(), "keep-alive") {
		t.Errorf("loss = %v, want the keep-alive's", tr.Err)
	}
	want := []string{"connecting --connected--> up", "up --went-bad--> bad", "bad --close--> closing", "closing --release--> released"}
	if diff := cmp.Diff(want, r.nextGens(4)); diff != "" {
		t.Errorf("generation steps (-want +got):\n%s", diff)
	}
	select {
	case st := <-r.inner:
		if st.machine == "generation" && st.from != "connecting" {
			t.Errorf("a second step of the lost generation: %+v", st)
		}
	default:
	}
}

// TestGenerationRetiredByClose: Close retires an established generation
// without a loss: up to closing, released, disposed.
func TestGenerationRetiredByClose(t *testing.T) {
	r := newConnRun(t, coveragePolicy, nil)
	r.expect(conn.Established)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := r.sup.Close(ctx); err != nil && !errors.Is(err, conn.ErrIncompleteShutdown) {
		t.Fatal(err)
	}
	want := []string{"connecting --connected--> up", "up --close--> closing", "closing --release--> released"}
	if diff := cmp.Diff(want, r.nextGens(3)); diff != "" {
		t.Errorf("generation steps (-want +got):\n%s", diff)
	}
	r.expect(conn.Disposing, conn.Disposed)
}
