package sim_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn/sim"
)

var (
	seeds      = flag.Int("seeds", 200, "run `N` seeds (CI runs 10000), and look for each planted bug within as many")
	from       = flag.Uint64("from", 1, "the first `seed` of -seeds")
	seed       = flag.Uint64("seed", 0, "replay one `seed`; with -v its whole log is printed")
	schedFile  = flag.String("schedule", "", "replay the schedule in `FILE` (a shrunk one a violation wrote)")
	bugFlag    = flag.String("bug", "", "plant the bug `NAME` for -seed or -schedule (see conn/internal/bugs; needs -tags simbugs)")
	traceDir   = flag.String("trace-dir", os.TempDir(), "where a violation's trace and shrunk schedule are written")
	shrinkRuns = flag.Int("shrink", 300, "runs the shrinker may make for a violation; 0 turns it off")
	planted    = flag.Bool("planted", false, "look for each planted bug within -seeds seeds too (CI does; needs -tags simbugs)")
	rates      = flag.Bool("rates", false, "with -planted, run all -seeds seeds per planted bug, report how many find it, and how often a finding seed reproduces when replayed")
	exact      = flag.Bool("exact", false, "run each of -seeds seeds twice and report how many replay exactly (the same log, event for event); fail for each that does not")
	replayN    = flag.Int("replay", 0, "after the seeds, run `N` of them (evenly spread) twice each and report how many replay exactly (CI runs 100)")
	workers    = flag.Int("workers", runtime.GOMAXPROCS(0), "runs at once")
	wire       = flag.Bool("wire", false, "with -seed -v, log every message between the supervisor and a process")
)

// plantedBug is a switch of conn/internal/bugs (planted_on_test.go).
type plantedBug struct {
	name string
	on   *bool
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
	if *planted && len(plantedBugs) == 0 {
		t.Fatal("-planted: the planted bugs are compiled in only with the tag simbugs: go test -tags simbugs ./conn/sim -planted")
	}
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
	if *replayN > 0 {
		rstart := time.Now()
		same, n := replayExact(t, *from, *seeds, uint64(max(*seeds / *replayN, 1)), false)
		line := fmt.Sprintf("sim: replay exact %d/%d", same, n)
		fmt.Println(line)
		t.Logf("%s (in %v)", line, time.Since(rstart).Round(time.Millisecond))
	}
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

// exactness runs each of -seeds seeds twice and reports how many
// replayed exactly; it fails t for each that did not.
func exactness(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	same, n := replayExact(t, *from, *seeds, 1, true)
	line := fmt.Sprintf("sim: replay exact %d/%d", same, n)
	fmt.Println(line)
	t.Log(line)
}

// replayExact runs n seeds from first, every step-th, each twice, one run
// after the other on one worker, and compares the two runs' whole logs
// (the supervisors' log lines included) byte for byte. It fails t for
// each seed whose runs differed (with strict), or else only for those
// whose runs ended differently (another invariant broken, or none), with
// the first line where they part, and writes both logs to -trace-dir; it
// returns how many of the seeds it ran replayed exactly, and how many it
// ran.
func replayExact(t *testing.T, first uint64, n int, step uint64, strict bool) (same, ran int) {
	var next atomic.Uint64
	next.Store(first)
	var mu sync.Mutex
	var wg sync.WaitGroup
	logged := func(sched sim.Schedule) ([]string, string) {
		var lines []string
		var lmu sync.Mutex
		res := sim.Run(t, sched, sim.Options{Log: func(l string) {
			lmu.Lock()
			lines = append(lines, l)
			lmu.Unlock()
		}})
		ended := "no violation"
		if res.Violation != nil {
			ended = res.Violation.Invariant
		}
		return sim.Canonical(lines), ended
	}
	for range max(*workers, 1) {
		wg.Go(func() {
			for {
				s := next.Add(step) - step
				if s >= first+uint64(n) {
					return
				}
				sched := sim.Generate(s)
				a, endA := logged(sched)
				b, endB := logged(sched)
				mu.Lock()
				ran++
				if slices.Equal(a, b) {
					same++
					mu.Unlock()
					continue
				}
				mu.Unlock()
				i := 0
				for i < min(len(a), len(b)) && a[i] == b[i] {
					i++
				}
				line := func(l []string) string {
					if i < len(l) {
						return l[i]
					}
					return "(end of log)"
				}
				pa := filepath.Join(*traceDir, fmt.Sprintf("mcpfsm-sim-%d.replay-a.log", s))
				pb := filepath.Join(*traceDir, fmt.Sprintf("mcpfsm-sim-%d.replay-b.log", s))
				_ = os.WriteFile(pa, []byte(strings.Join(a, "\n")+"\n"), 0o644)
				_ = os.WriteFile(pb, []byte(strings.Join(b, "\n")+"\n"), 0o644)
				report := t.Logf
				if strict || endA != endB {
					report = t.Errorf
				}
				report("seed %d did not replay exactly (%s; %s): its two runs part at line %d:\n  %s\n  %s\n  logs: %s %s", s, endA, endB, i+1, line(a), line(b), pa, pb)
			}
		})
	}
	wg.Wait()
	return same, ran
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
		i := slices.IndexFunc(plantedBugs, func(b plantedBug) bool { return b.name == *bugFlag })
		if i < 0 {
			t.Fatalf("-bug %s: no such planted bug (they are compiled in only with the tag simbugs: go test -tags simbugs)", *bugFlag)
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
