package front

import (
	"testing"

	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/conn"
)

// A transition of a client's own instance wakes the calls that wait for
// the loss of a connection (awaitLoss), as a shared instance's does:
// before, only Observe (shared instances) did, so a call whose own
// instance's connection ended waited out lossWait whenever it read the
// state before the supervisor took the loss, and then said "connected
// again" 2 s later instead of "connection lost; reconnecting in 1s"
// (front/sim seeds 62, 65, 77 and 286 did not replay exactly).
func TestInstanceTransitionWakesLossWait(t *testing.T) {
	f := New(Options{Registry: conn.NewRegistry()})
	c := f.newClient(sessionClient, authz.Caller{})
	defer c.stop()
	var cfg conn.Config
	observed := 0
	c.configure("a", &cfg, func(conn.Transition) { observed++ })
	moved := f.transitioned()
	cfg.OnTransition(conn.Transition{Server: "a", From: conn.Established, To: conn.LostReconnecting})
	if observed != 1 {
		t.Fatalf("the instance observed %d transitions, want 1", observed)
	}
	select {
	case <-moved:
	default:
		t.Fatal("a transition of a client's own instance did not wake the calls waiting for a loss")
	}
}
