package sim_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn/internal/bugs"
	"github.com/mcpfsm/mcpfsm/conn/sim"
)

var (
	seeds      = flag.Int("seeds", 200, "run `N` seeds (CI runs 10000), and look for each planted bug within as many")
	from       = flag.Uint64("from", 1, "the first `seed` of -seeds")
	seed       = flag.Uint64("seed", 0, "replay one `seed`; with -v its whole log is printed")
	schedFile  = flag.String("schedule", "", "replay the schedule in `FILE` (a shrunk one a violation wrote)")
	bugFlag    = flag.String("bug", "", "plant the bug `NAME` for -seed or -schedule (see conn/internal/bugs)")
	traceDir   = flag.String("trace-dir", os.TempDir(), "where a violation's trace and shrunk schedule are written")
	shrinkRuns = flag.Int("shrink", 300, "runs the shrinker may make for a violation; 0 turns it off")
	planted    = flag.Bool("planted", false, "look for each planted bug within -seeds seeds too (CI does)")
	rates      = flag.Bool("rates", false, "with -planted, run all -seeds seeds per planted bug, report how many find it, and how often a finding seed reproduces when replayed")
	exact      = flag.Bool("exact", false, "run each of -seeds seeds twice and report how many replay exactly (the same log, event for event)")
	workers    = flag.Int("workers", runtime.GOMAXPROCS(0), "runs at once")
	wire       = flag.Bool("wire", false, "with -seed -v, log every message between the supervisor and a process")
)

// plantedBugs are the switches of conn/internal/bugs, by name.
var plantedBugs = []struct {
	name string
	on   *bool
}{
	{"NoGenerationFence", &bugs.NoGenerationFence},
	{"SkipCloseBarrier", &bugs.SkipCloseBarrier},
	{"CallIgnoresDeadline", &bugs.CallIgnoresDeadline},
	{"PublishBeforeListed", &bugs.PublishBeforeListed},
}

// TestSim runs -seeds seeds from -from, each a whole simulated run with
// every invariant checked after every step, and then looks for each
// planted bug within as many seeds. A violation is reported with its
// seed, the invariant, the run's last lines, its trace and the command
// that replays it, and shrunk. It prints the line CI greps:
//
//	sim: N seeds, 0 violations (planted: 4/4 found)
func TestSim(t *testing.T) {
	if *seed != 0 || *schedFile != "" {
		replay(t)
		return
	}
	if *exact {
		exactness(t)
		return
	}
	// A run makes much short-lived garbage; collecting less often saves
	// a third of the time.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	start := time.Now()
	found := runSeeds(t, *from, *seeds, false)
	took := time.Since(start)
	for _, res := range found {
		report(t, res, "")
	}
	want, got := 0, 0
	if *planted {
		want = len(plantedBugs)
		for _, b := range plantedBugs {
			*b.on = true
			bstart := time.Now()
			hits := runSeeds(t, *from, *seeds, !*rates)
			*b.on = false
			if len(hits) == 0 {
				t.Errorf("planted bug %s: not found within %d seeds", b.name, *seeds)
				continue
			}
			got++
			h := hits[0]
			t.Logf("planted bug %s: found by seed %d (invariant %s) in %v", b.name, h.Schedule.Seed, h.Violation.Invariant, time.Since(bstart).Round(time.Millisecond))
			if *rates {
				by := map[string]int{}
				for _, h := range hits {
					by[h.Violation.Invariant]++
				}
				t.Logf("planted bug %s: found by %d of %d seeds (%.2f%%), by invariant %v", b.name, len(hits), *seeds, 100*float64(len(hits))/float64(*seeds), by)
				*b.on = true
				again, tries := 0, 0
				for _, h := range hits[:min(len(hits), 20)] {
					for range 10 {
						tries++
						if r := sim.Run(t, h.Schedule, sim.Options{}); r.Violation != nil && r.Violation.Invariant == h.Violation.Invariant {
							again++
						}
					}
				}
				*b.on = false
				t.Logf("planted bug %s: replays of %d finding seeds reproduced it %d of %d times (%.0f%%)", b.name, min(len(hits), 20), again, tries, 100*float64(again)/float64(tries))
			}
		}
	}
	t.Logf("%d seeds in %v (%v a seed, %d workers)", *seeds, took.Round(time.Millisecond), (took / time.Duration(max(*seeds, 1))).Round(time.Microsecond), *workers)
	line := fmt.Sprintf("sim: %d seeds, %d violations", *seeds, len(found))
	if *planted {
		line += fmt.Sprintf(" (planted: %d/%d found)", got, want)
	}
	fmt.Println(line)
	t.Log(line)
	if len(found) > 0 {
		t.Fail()
	}
}

// exactness runs each of -seeds seeds twice, one run after the other on
// one worker, and reports how many runs were alike (the same log digest)
// and how many at least ended alike (the same invariant broken, or none).
func exactness(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	var same, outcome atomic.Int64
	var next atomic.Uint64
	next.Store(*from)
	var wg sync.WaitGroup
	for range max(*workers, 1) {
		wg.Go(func() {
			for {
				s := next.Add(1) - 1
				if s >= *from+uint64(*seeds) {
					return
				}
				sched := sim.Generate(s)
				a, b := sim.Run(t, sched, sim.Options{}), sim.Run(t, sched, sim.Options{})
				if a.Digest == b.Digest {
					same.Add(1)
				}
				if (a.Violation == nil) == (b.Violation == nil) && (a.Violation == nil || a.Violation.Invariant == b.Violation.Invariant) {
					outcome.Add(1)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d seeds run twice: %d (%.1f%%) replayed exactly, %d (%.1f%%) ended alike", *seeds,
		same.Load(), 100*float64(same.Load())/float64(*seeds), outcome.Load(), 100*float64(outcome.Load())/float64(*seeds))
}

// runSeeds runs n seeds from first on the workers and returns the
// results that broke an invariant, by seed; with stop, it stops at the
// first.
func runSeeds(t *testing.T, first uint64, n int, stop bool) []*sim.Result {
	var next atomic.Uint64
	next.Store(first)
	var mu sync.Mutex
	var found []*sim.Result
	var done atomic.Bool
	var wg sync.WaitGroup
	for range max(*workers, 1) {
		wg.Go(func() {
			for !done.Load() {
				s := next.Add(1) - 1
				if s >= first+uint64(n) {
					return
				}
				res := sim.Run(t, sim.Generate(s), sim.Options{})
				if res.Violation == nil {
					continue
				}
				mu.Lock()
				found = append(found, res)
				mu.Unlock()
				if stop {
					done.Store(true)
				}
			}
		})
	}
	wg.Wait()
	slices.SortFunc(found, func(a, b *sim.Result) int { return int(a.Schedule.Seed) - int(b.Schedule.Seed) })
	return found
}

// report fails t with a violation's report, its trace and, shrunk, its
// smaller schedule.
func report(t *testing.T, res *sim.Result, bug string) {
	t.Helper()
	replayFlags := fmt.Sprintf("-seed %d", res.Schedule.Seed)
	if bug != "" {
		replayFlags += " -bug " + bug
	}
	tr, err := sim.WriteTrace(res, *traceDir, fmt.Sprintf("mcpfsm-sim-%d.jsonl", res.Schedule.Seed))
	if err != nil {
		t.Logf("writing the trace: %v", err)
	}
	msg := sim.Report(res, tr, replayFlags)
	if *shrinkRuns > 0 {
		small, runs := sim.Shrink(t, res, 2, *shrinkRuns)
		p0, s0 := res.Schedule.Faults()
		p1, s1 := small.Schedule.Faults()
		path := filepath.Join(*traceDir, fmt.Sprintf("mcpfsm-sim-%d.shrunk.json", res.Schedule.Seed))
		if err := sim.WriteSchedule(small.Schedule, path); err != nil {
			t.Logf("writing the shrunk schedule: %v", err)
		}
		msg += fmt.Sprintf("  shrunk in %d runs from %d faulty processes and %d steps to %d and %d: %s\n", runs, p0, s0, p1, s1, path)
		msg += fmt.Sprintf("    replay it: go test ./conn/sim -run 'TestSim$' -schedule %s -v\n", path)
		msg += fmt.Sprintf("    it breaks: %v\n", small.Violation)
	}
	t.Error(msg)
}

// replay runs -seed or -schedule once, with its log under -v.
func replay(t *testing.T) {
	s := sim.Generate(*seed)
	if *schedFile != "" {
		var err error
		if s, err = sim.ReadSchedule(*schedFile); err != nil {
			t.Fatal(err)
		}
	}
	if *bugFlag != "" {
		i := slices.IndexFunc(plantedBugs, func(b struct {
			name string
			on   *bool
		}) bool {
			return b.name == *bugFlag
		})
		if i < 0 {
			t.Fatalf("-bug %s: no such planted bug", *bugFlag)
		}
		*plantedBugs[i].on = true
		defer func() { *plantedBugs[i].on = false }()
	}
	opts := sim.Options{}
	if testing.Verbose() {
		opts.Log = func(l string) { fmt.Println(l) }
		opts.Wire = *wire
	}
	res := sim.Run(t, s, opts)
	t.Logf("seed %d: %d steps, %d processes, %d requests, %v simulated", s.Seed, len(s.Steps), res.Procs, res.Calls, res.Took)
	if res.Violation != nil {
		report(t, res, *bugFlag)
	}
}
