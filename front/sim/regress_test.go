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
// of that instant (each differed in about one run in two).
func TestReplayRegressions(t *testing.T) {
	for _, s := range []uint64{84, 94} {
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
