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
