package e2e_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
)

// TestStatelessHTTPRestartIsALoss: on protocol 2026-07-28 there is no
// session to lose, but a restart breaks the subscriptions/listen stream
// through which list changes arrive. The supervisor treats that as a
// loss, so the next generation subscribes and lists again and no change is
// missed silently; tools are identical afterwards.
func TestStatelessHTTPRestartIsALoss(t *testing.T) {
	h := newHTTPServerWith(t, true)
	e := startHTTP(t, h, conn.Config{})
	if got := e.sup.Status().Protocol; got != conn.DefaultProtocolVersion {
		t.Fatalf("negotiated %q, want %s", got, conn.DefaultProtocolVersion)
	}
	before := e.sup.Status().Tools
	restarted := time.Now()
	h.restart(true)
	awaitRecovery(t, e, restarted)
	var lost conn.Transition
	for _, tr := range e.rec.All() {
		if tr.To == conn.LostReconnecting {
			lost = tr
			break
		}
	}
	if lost.Err == nil || !strings.Contains(lost.Err.Error(), "subscriptions/listen stream") {
		t.Errorf("loss cause %v, want the broken subscriptions/listen stream", lost.Err)
	}
	if got := e.sup.Status().Tools; !slices.Equal(got, before) {
		t.Errorf("tools after recovery %v, want %v", got, before)
	}
}

// TestStatelessHTTPHangIsDetected: protocol 2026-07-28 has no ping; the
// keep-alive probes with server/discover, and a server that stops
// answering is lost within two intervals.
func TestStatelessHTTPHangIsDetected(t *testing.T) {
	const every = 100 * time.Millisecond
	h := newHTTPServerWith(t, true)
	e := startHTTP(t, h, conn.Config{KeepAlive: every})
	// Answered probes keep it established: wait for three of them.
	start := h.discovers.Load()
	tick := time.NewTicker(every / 4)
	defer tick.Stop()
	deadline := time.After(wait)
	for h.discovers.Load() < start+3 {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%d keep-alive probes in %v, want 3", h.discovers.Load()-start, wait)
		}
	}
	if n := e.rec.Count(conn.LostReconnecting); n != 0 {
		t.Fatalf("lost while the server answered its probes:\n%s", e.rec.Dump())
	}
	thaw := h.freeze()
	defer thaw()
	frozen := time.Now()
	lost := e.rec.Await(t, wait, conn.LostReconnecting)
	took := time.Since(frozen)
	t.Logf("hang noticed after %v: %v", took, lost.Err)
	if took > 2*every+slack {
		t.Errorf("hang noticed after %v, want within 2 x KeepAlive (%v) and the slack of a loaded machine (%v)", took, 2*every, slack)
	}
	if lost.Err == nil || !strings.Contains(lost.Err.Error(), "keep-alive server/discover got no answer") {
		t.Errorf("loss cause %v, want the unanswered server/discover probe", lost.Err)
	}
	thaw()
	e.rec.Await(t, wait, conn.Established)
	e.mustEcho("after the hang")
}
