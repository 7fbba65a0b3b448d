package sim

import (
	"slices"
	"testing"
)

// The seeds that once broke an invariant on the unmutated front, each a
// case the simulator's model of go-sdk had wrong: a session closed with a
// call in flight (58: its DELETE is answered once the call ended on the
// backend; 939: its instance closes then), a call answered by the front
// itself during an outage, which uses the instance (370), and a
// 2026-07-28 call the client gave up on, which holds the client until it
// ends on the backend (926). Each must keep every promise.
func TestRegressions(t *testing.T) {
	for _, s := range []uint64{58, 370, 926, 939} {
		res := Run(t, s, Options{})
		if res.Stalled {
			stalled(res, "front sim: a regression seed stalled")
		}
		for _, v := range res.Violations {
			t.Errorf("seed %d: %v", s, v)
		}
	}
}

// TestReplayRegressions runs seeds whose two runs once differed three
// times each and compares their logs: 84 and 94, a call that failed as
// Close disposed its instance, worded "disposing" or "disposed" as the
// front read the state before or after the instance's second transition
// of that instant (each differed in about one run in two); 62, 65, 77
// and 286, a call whose own instance's connection ended under it, which
// waited for the supervisor to register the loss on a signal only the
// shared instances' transitions sent: it said "connection lost" at once
// when it read the state after the loss, else "connected again" 2 s
// later, and its instance's idle close moved with it (on the old code
// 7 of 72 runs of the four, 18 a seed, left their seed's usual log;
// front's TestInstanceTransitionWakesLossWait shows the cause alone);
// 315, a client served without the shared server's tools after a reload
// restarted it ("unknown tool"), when the host's update after the
// reload synced its read of the registry after Sync's newer one (1 of
// 26 runs on the old code; front's TestUpdatesApplyInOrder shows it
// every time); 56, a client's call after a reload had closed its
// instance, which found the instance bound reached or started a new
// instance as the close of the old one freed its slot before or after
// the start (1 of 8 runs under -race on the old code, none seen
// without; front/internal/instance's TestOutsideCloseFreesTheSlotFirst
// shows it every time).
func TestReplayRegressions(t *testing.T) {
	for _, s := range []uint64{84, 94, 62, 65, 77, 286, 315, 56} {
		var first []string
		for i := range 3 {
			res := Run(t, s, Options{})
			if res.Stalled {
				stalled(res, "front sim: a regression seed stalled")
			}
			log := Canonical(res.Log)
			if i == 0 {
				first = log
			} else if !slices.Equal(log, first) {
				t.Errorf("seed %d did not replay exactly", s)
				break
			}
		}
	}
}
