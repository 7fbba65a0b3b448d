package sim

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var (
	seeds   = flag.Int("seeds", 8, "run `N` seeds (CI runs more), and look for each planted bug within as many")
	from    = flag.Uint64("from", 1, "the first `seed` of -seeds")
	seed    = flag.Uint64("seed", 0, "run one `seed`; with -v its whole log is printed")
	bugFlag = flag.String("bug", "", "plant the bug `NAME` (see front/internal/bugs; needs -tags simbugs): with -seed, for that seed; else look for it within -seeds seeds and report the first that finds it")
	planted = flag.Bool("planted", false, "look for each planted bug within -seeds seeds too, each in a process of its own (CI does; needs -tags simbugs)")
	replayN = flag.Int("replay", 0, "after the seeds, run `N` of them (evenly spread) twice each and report how many replay exactly (the same log)")
	workers = flag.Int("workers", runtime.GOMAXPROCS(0), "runs at once")
	stall   = flag.Duration("stall", 10*time.Second, "real `time` without progress after which a run is reported stalled")
)

// plantedBug is a switch of front/internal/bugs (planted_on_test.go).
type plantedBug struct {
	name string
	on   *bool
}

// stalled reports a stalled run and ends the process: the run's
// goroutines stay blocked for good, so neither the test nor goleak could
// end.
func stalled(res Result, line string) {
	for _, v := range res.Violations {
		fmt.Printf("seed %d: %v\n", res.Seed, v)
	}
	fmt.Println(line)
	os.Exit(3)
}

// TestSim runs -seeds seeds from -from, each a whole simulated run of the
// gateway with every invariant checked after every step; with -planted,
// then each planted bug within as many seeds; with -replay N, N seeds
// twice. It prints the lines CI shows:
//
//	front sim: N seeds, 0 violations (planted: 3/3 found)
//	front sim: replay exact k/N
func TestSim(t *testing.T) {
	if *bugFlag != "" {
		hunt(t)
		return
	}
	if *seed != 0 {
		res := Run(t, *seed, Options{Stall: *stall})
		if res.Stalled {
			stalled(res, fmt.Sprintf("front sim: seed %d stalled", *seed))
		}
		for _, l := range res.Log {
			t.Log(l)
		}
		for _, v := range res.Violations {
			t.Error(v)
		}
		return
	}
	start := time.Now()
	bad := runSeeds(t, *from, *seeds, func(res Result) {
		if res.Stalled {
			stalled(res, fmt.Sprintf("front sim: seed %d stalled; replay it: go test ./front/sim -run '^TestSim$' -seed %d -v", res.Seed, res.Seed))
		}
		for _, v := range res.Violations {
			t.Errorf("seed %d: %v\n  replay: go test ./front/sim -run '^TestSim$' -seed %d -v", res.Seed, v, res.Seed)
		}
	})
	t.Logf("%d seeds in %v (%d workers)", *seeds, time.Since(start).Round(time.Millisecond), *workers)
	got, want := 0, 0
	if *planted {
		if len(plantedBugs) == 0 {
			t.Fatal("-planted: the planted bugs are compiled in only with the tag simbugs: go test -tags simbugs ./front/sim -planted")
		}
		want = len(plantedBugs)
		for _, b := range plantedBugs {
			if found, line := plant(t, b.name); found {
				got++
				t.Log(line)
			} else {
				t.Errorf("planted bug %s: not found within %d seeds: %s", b.name, *seeds, line)
			}
		}
	}
	if *replayN > 0 {
		same, n := replay(t)
		fmt.Printf("front sim: replay exact %d/%d\n", same, n)
	}
	line := fmt.Sprintf("front sim: %d seeds, %d violations", *seeds, bad)
	if *planted {
		line += fmt.Sprintf(" (planted: %d/%d found)", got, want)
	}
	fmt.Println(line)
	t.Log(line)
}

// runSeeds runs n seeds from first on -workers workers, hands each
// result to see (on one goroutine at a time), and returns how many broke
// an invariant.
func runSeeds(t *testing.T, first uint64, n int, see func(Result)) int {
	var next atomic.Uint64
	next.Store(first)
	var mu sync.Mutex
	bad := 0
	var wg sync.WaitGroup
	for range max(*workers, 1) {
		wg.Go(func() {
			for {
				s := next.Add(1) - 1
				if s >= first+uint64(n) {
					return
				}
				res := Run(t, s, Options{Stall: *stall})
				mu.Lock()
				if len(res.Violations) > 0 {
					bad++
				}
				see(res)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return bad
}

// plant looks for the planted bug name within -seeds seeds in a child
// process (a bug that deadlocks leaves its run's goroutines blocked for
// good), and returns whether it was found and the child's report.
func plant(t *testing.T, name string) (bool, string) {
	start := time.Now()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSim$", "-bug="+name,
		fmt.Sprint("-seeds=", *seeds), fmt.Sprint("-from=", *from), fmt.Sprint("-workers=", *workers), fmt.Sprint("-stall=", *stall))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run()
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "front sim: planted ") {
			return strings.Contains(l, " found by seed "), fmt.Sprintf("%s (in %v)", l, time.Since(start).Round(time.Millisecond))
		}
	}
	return false, "the child process reported nothing:\n" + out.String()
}

// hunt plants -bug and runs -seed, or -seeds seeds until one breaks an
// invariant; it prints the line plant reads, and ends the process at
// once: the run that found a deadlock cannot end.
func hunt(t *testing.T) {
	i := slices.IndexFunc(plantedBugs, func(b plantedBug) bool { return b.name == *bugFlag })
	if i < 0 {
		t.Fatalf("-bug %q: no such planted bug (build with -tags simbugs)", *bugFlag)
	}
	*plantedBugs[i].on = true
	if *seed != 0 {
		res := Run(t, *seed, Options{Stall: *stall})
		for _, l := range res.Log {
			fmt.Println(l)
		}
		for _, v := range res.Violations {
			fmt.Println(v)
		}
		os.Exit(0)
	}
	var once sync.Once
	runSeeds(t, *from, *seeds, func(res Result) {
		if len(res.Violations) == 0 {
			return
		}
		once.Do(func() {
			v := res.Violations[0]
			detail, _, _ := strings.Cut(v.Detail, "\n")
			fmt.Printf("seed %d: %v\n", res.Seed, v)
			fmt.Printf("front sim: planted %s found by seed %d (%s: %s)\n", *bugFlag, res.Seed, v.Invariant, detail)
			os.Exit(0)
		})
	})
	fmt.Printf("front sim: planted %s not found within %d seeds\n", *bugFlag, *seeds)
	os.Exit(0)
}

// replay runs -replay of the seeds, evenly spread, twice each, and
// compares their logs (each instant's lines sorted: goroutines that act
// at one simulated instant may log in any order). It fails t for a seed
// whose two runs end differently.
func replay(t *testing.T) (same, n int) {
	step := uint64(max(*seeds / *replayN, 1))
	var mu sync.Mutex
	var list []uint64
	for s := *from; s < *from+uint64(*seeds) && len(list) < *replayN; s += step {
		list = append(list, s)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(*workers, 1) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(list) {
					return
				}
				a := Run(t, list[i], Options{Stall: *stall})
				b := Run(t, list[i], Options{Stall: *stall})
				if a.Stalled || b.Stalled {
					stalled(a, fmt.Sprintf("front sim: seed %d stalled on replay", list[i]))
				}
				la, lb := Canonical(a.Log), Canonical(b.Log)
				mu.Lock()
				n++
				if slices.Equal(la, lb) {
					same++
				} else {
					k := 0
					for k < min(len(la), len(lb)) && la[k] == lb[k] {
						k++
					}
					at := func(l []string) string {
						if k < len(l) {
							return l[k]
						}
						return "(end of log)"
					}
					t.Logf("seed %d did not replay exactly: its runs part at line %d:\n  %s\n  %s", list[i], k+1, at(la), at(lb))
					if (len(a.Violations) == 0) != (len(b.Violations) == 0) {
						t.Errorf("seed %d ended differently on replay: %v, then %v", list[i], a.Violations, b.Violations)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return same, n
}
