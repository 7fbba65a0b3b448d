package sim

import (
	"testing"
)

// Shrink looks for a smaller schedule that still breaks the invariant
// res broke: it drops steps, and heals processes (a healthy Proc), in
// chunks that halve down to single ones, keeping every change after which
// a run still breaks the same invariant. Replays are not exact (see the
// package doc), so each candidate gets tries runs; budget bounds the runs
// in all. It returns the smallest failing result found (res itself if
// nothing smaller failed) and the runs it made.
func Shrink(t *testing.T, res *Result, tries, budget int) (*Result, int) {
	best := res
	runs := 0
	fails := func(s Schedule) *Result {
		for range tries {
			if runs >= budget {
				return nil
			}
			runs++
			if r := Run(t, s, Options{}); r.Violation != nil && r.Violation.Invariant == res.Violation.Invariant {
				return r
			}
		}
		return nil
	}
	// Heal processes first (a fault is what a reader of the schedule
	// looks for), then drop steps.
	shrinkList(len(best.Schedule.Procs), false, func(lo, hi int) bool {
		s := best.Schedule.clone()
		changed := false
		for i := lo; i < hi && i < len(s.Procs); i++ {
			changed = changed || s.Procs[i] != (Proc{})
			s.Procs[i] = Proc{}
		}
		if !changed {
			return false
		}
		if r := fails(s); r != nil {
			best = r
			return true
		}
		return false
	})
	shrinkList(len(best.Schedule.Steps), true, func(lo, hi int) bool {
		s := best.Schedule.clone()
		if lo >= len(s.Steps) {
			return false
		}
		hi = min(hi, len(s.Steps))
		// The time of the dropped steps goes to the next one, so that
		// what remains keeps its moments.
		var gap = s.Steps[lo].After
		for _, st := range s.Steps[lo+1 : hi] {
			gap += st.After
		}
		s.Steps = append(s.Steps[:lo], s.Steps[hi:]...)
		if lo < len(s.Steps) {
			s.Steps[lo].After += gap
		}
		if r := fails(s); r != nil {
			best = r
			return true
		}
		return false
	})
	for len(best.Schedule.Procs) > 0 && best.Schedule.Procs[len(best.Schedule.Procs)-1] == (Proc{}) {
		best.Schedule.Procs = best.Schedule.Procs[:len(best.Schedule.Procs)-1]
	}
	return best, runs
}

// shrinkList tries to change chunks [lo, hi) of a list of n items, from
// halves down to single items; try reports whether the change was kept.
// With removes, a kept change removed the chunk: the list is shorter and
// the same lo is tried again.
func shrinkList(n int, removes bool, try func(lo, hi int) bool) {
	for size := max(n/2, 1); size >= 1; size /= 2 {
		for lo := 0; lo < n; {
			if try(lo, lo+size) && removes {
				n -= min(size, n-lo)
				continue
			}
			lo += size
		}
		if size == 1 {
			break
		}
	}
}

// clone copies s deeply enough for the shrinker to change its lists.
func (s Schedule) clone() Schedule {
	c := s
	c.Procs = append([]Proc(nil), s.Procs...)
	c.Steps = append([]Step(nil), s.Steps...)
	return c
}
