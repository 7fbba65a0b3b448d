package sim_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mcpfsm/mcpfsm/conn/sim"
)

// regressions are the bugs the simulator found in conn, each by the seed
// that found it; testdata/seed-N.json is its shrunk schedule. Both must
// now keep every invariant (the seed's schedule changes meaning if the
// generator changes; the shrunk one does not).
var regressions = []struct {
	seed uint64
	bug  string
}{
	{843, "Close in halted, after an attempt whose process never exits, returned nil while that process ran; a config reload then started the server beside it"},
	{2530, "a strict Start whose first attempt's process did not exit returned the attempt's error alone, leaving the process running unreported"},
	{4241, "a Subscribe or Unsubscribe while an attempt was sending the subscriptions was never sent to that generation: it was established without the new one and with the ended one"},
	{1775, "the catch-up of subscriptions made while connecting skipped a generation whose attempt had none to send (an empty list read as a server that takes none)"},
	{13326, "a Subscribe or Unsubscribe that waited for another to finish then got a whole CallTimeout of its own"},
	{10522, "a re-sync the server did not answer within ConnectTimeout was never tried again: the registry stayed behind the recovered server"},
	{2017, "a call that waited for a slot of MaxConcurrentCalls then got a whole CallTimeout of its own: it outlived CallTimeout by the wait"},
}

// TestRegressions replays each regression, its seed and its shrunk
// schedule, a few times (a replay is not exact: see the package doc).
func TestRegressions(t *testing.T) {
	for _, reg := range regressions {
		t.Run(fmt.Sprint(reg.seed), func(t *testing.T) {
			shrunk, err := sim.ReadSchedule(filepath.Join("testdata", fmt.Sprintf("seed-%d.json", reg.seed)))
			if err != nil {
				t.Fatal(err)
			}
			for name, s := range map[string]sim.Schedule{"seed": sim.Generate(reg.seed), "shrunk": shrunk} {
				for range 3 {
					if res := sim.Run(t, s, sim.Options{}); res.Violation != nil {
						t.Errorf("%s (%s): %v\n%s", name, reg.bug, res.Violation, sim.Report(res, "", fmt.Sprintf("-seed %d", reg.seed)))
						break
					}
				}
			}
		})
	}
}

// replayRegressions are seeds whose two runs differed at one instant,
// each for the cause named; they now replay exactly.
var replayRegressions = []struct {
	seed  uint64
	cause string
}{
	{54, "a call whose connection ended named the supervisor's state, which its loop was changing at that instant"},
	{303, "a process's crash after its answer cut the link from the server's goroutine, racing conn's re-sync"},
	{378, "a re-sync cut short by a crash was logged as failed or not, as the loss reached the loop before or after it"},
	{433, "the wait for subscriptions/listen's acknowledgement and ConnectTimeout ended at one instant: the attempt failed or went on"},
	{242, "a keep-alive probe's EOF and the process's exit raced to name the loss and date it"},
	{340, "a call whose connection ended took the cause of whichever report came first"},
	{631, "a host's deadline and HoldCalls ended at one instant"},
	{813, "a held call named the state disposing or disposed, both entered at one instant by Close"},
	{736, "a call that waited for a slot of MaxConcurrentCalls took it as its connection ended: sent into the closing session, or failed fast naming the state the loop was leaving"},
	{7043, "two calls retired by a session that ended by itself took the session's error (its Close's) or their own EOF, as each saw the end reported or not"},
	{8076, "a tools/list_changed read just before the attempt's last page reached the loop before or after the attempt's end (the SDK's handler runs on its own goroutine): a stale listing re-listed at once, or a change logged as new"},
	{17071, "a call's CallTimeout and a keep-alive probe's timeout ran out at one instant: the call failed as timed out or as retired by the loss"},
}

// TestReplayRegressions runs each seed of replayRegressions three times
// and compares the logs (each differed in about one run in two before),
// the supervisors' INFO lines included, as -exact does.
func TestReplayRegressions(t *testing.T) {
	for _, reg := range replayRegressions {
		t.Run(fmt.Sprint(reg.seed), func(t *testing.T) {
			var first uint64
			for i := range 3 {
				res := sim.Run(t, sim.Generate(reg.seed), sim.Options{Log: func(string) {}})
				if i == 0 {
					first = res.Digest
				} else if res.Digest != first {
					t.Errorf("seed %d did not replay exactly (%s)", reg.seed, reg.cause)
					return
				}
			}
		})
	}
}
