package fsmtest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpfsm/mcpfsm/fsm"
)

// Coverage counts which targets of a table the steps it is shown took:
// every branch (see [Target]) and every edge (a branch's From, Event and
// To, whatever its guard). It is not safe for concurrent use; feed it
// from one goroutine, or from a machine's Observer, which never runs
// concurrently with itself.
type Coverage[S ~string, E ~string] struct {
	name      string
	targets   []Target[S, E]
	reachable []bool
	hit       []bool
	// byStep finds the target a leaf step takes: a leaf's edges for one
	// event have distinct conditions, so From, Event and When name one.
	byStep map[Step[S, E]]int
	stray  []Step[S, E] // steps that are no edge of the table
}

// NewCoverage returns an empty Coverage of spec's targets.
func NewCoverage[S ~string, E ~string, D any](spec fsm.Spec[S, E, D]) *Coverage[S, E] {
	c := &Coverage[S, E]{name: spec.Name, targets: Targets(spec), byStep: map[Step[S, E]]int{}}
	c.hit = make([]bool, len(c.targets))
	c.reachable = make([]bool, len(c.targets))
	index := map[Target[S, E]]int{}
	for i, tg := range c.targets {
		index[tg] = i
	}
	for _, p := range Paths(spec) {
		c.reachable[index[p.Target]] = true
	}
	for _, e := range spec.Flatten() {
		tg := Target[S, E]{From: e.Source, Event: e.Event, When: e.When, To: e.Target, Transition: e.Transition}
		c.byStep[Step[S, E]{From: e.From, Event: e.Event, When: e.When, To: e.To}] = index[tg]
	}
	return c
}

// Hit records a step and reports whether it is an edge of the table;
// one that is not is kept, and [Coverage.Err] names it.
func (c *Coverage[S, E]) Hit(st Step[S, E]) bool {
	i, ok := c.byStep[st]
	if !ok {
		c.stray = append(c.stray, st)
		return false
	}
	c.hit[i] = true
	return true
}

// Observer returns an [fsm.Options] Observer that records every step of
// a machine of the covered spec.
func Observer[S ~string, E ~string, D any](c *Coverage[S, E]) func(fsm.Step[S, E, D]) {
	return func(st fsm.Step[S, E, D]) { c.Hit(StepOf(st)) }
}

// Missing returns the targets no recorded step took, in the order of
// [Targets].
func (c *Coverage[S, E]) Missing() []Target[S, E] {
	var out []Target[S, E]
	for i, tg := range c.targets {
		if !c.hit[i] {
			out = append(out, tg)
		}
	}
	return out
}

// Unreachable returns the targets no path from the initial state reaches
// (see [Paths]): no driver can take them, whatever its data.
func (c *Coverage[S, E]) Unreachable() []Target[S, E] {
	var out []Target[S, E]
	for i, tg := range c.targets {
		if !c.reachable[i] {
			out = append(out, tg)
		}
	}
	return out
}

// counts returns the edges and branches, and how many of each were taken.
func (c *Coverage[S, E]) counts() (edges, edgesHit, branches, branchesHit int) {
	type edge struct {
		from, to S
		ev       E
	}
	seen := map[edge]bool{}
	for i, tg := range c.targets {
		branches++
		if c.hit[i] {
			branchesHit++
		}
		e := edge{tg.From, tg.To, tg.Event}
		was, ok := seen[e]
		seen[e] = was || c.hit[i]
		if !ok {
			edges++
		}
	}
	for _, hit := range seen {
		if hit {
			edgesHit++
		}
	}
	return edges, edgesHit, branches, branchesHit
}

// Percent is the share of branches taken, from 0 to 100; 100 for a table
// with none.
func (c *Coverage[S, E]) Percent() float64 {
	_, _, b, hit := c.counts()
	if b == 0 {
		return 100
	}
	return 100 * float64(hit) / float64(b)
}

// String is one line: "fsm coverage NAME: 33/33 edges, 41/41 branches (100%)".
func (c *Coverage[S, E]) String() string {
	e, eHit, b, bHit := c.counts()
	return fmt.Sprintf("fsm coverage %s: %d/%d edges, %d/%d branches (%s%%)", c.name, eHit, e, bHit, b,
		strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", c.Percent()), "0"), "."))
}

// Err returns nil when every target was taken and no stray step was
// recorded; otherwise an error naming every missing target (saying which
// no path reaches) and every stray step, one per line.
func (c *Coverage[S, E]) Err() error {
	var lines []string
	for i, tg := range c.targets {
		switch {
		case c.hit[i]:
		case !c.reachable[i]:
			lines = append(lines, "unreachable: "+tg.String()+" (no path from the initial state takes it)")
		default:
			lines = append(lines, "not reached: "+tg.String())
		}
	}
	for _, st := range c.stray {
		lines = append(lines, fmt.Sprintf("not an edge: %s --%s [%s]--> %s", st.From, st.Event, st.When, st.To))
	}
	if len(lines) == 0 {
		return nil
	}
	return fmt.Errorf("%s\n\t%s", c, strings.Join(lines, "\n\t"))
}

// Drive runs drive once for every path of spec ([Paths]), in order, and
// records the steps it returns: the transitions the system under test
// took when driven along the path (from a machine's Observer, a log, a
// trace). It then fails t with [Coverage.Err] unless every target was
// taken, so a table that grows an edge no test reaches fails its tests,
// and logs the coverage line. It returns the Coverage.
func Drive[S ~string, E ~string, D any](t testing.TB, spec fsm.Spec[S, E, D], drive func(p Path[S, E]) []Step[S, E]) *Coverage[S, E] {
	t.Helper()
	c := NewCoverage(spec)
	for _, p := range Paths(spec) {
		for _, st := range drive(p) {
			c.Hit(st)
		}
	}
	if err := c.Err(); err != nil {
		t.Errorf("%v", err)
	} else {
		t.Logf("%s", c)
	}
	return c
}

// Replay is a driver for [Drive] that runs the path on a fresh machine of
// spec with opts: it fires each step's event with the data data returns
// for that step (the data that makes the step's guard, and no guard tried
// before it, accept), and returns the steps the machine took. opts's own
// Observer still runs; a step the machine refuses ends the run.
func Replay[S ~string, E ~string, D any](spec fsm.Spec[S, E, D], opts fsm.Options[S, E, D], data func(Step[S, E]) D) func(Path[S, E]) []Step[S, E] {
	return func(p Path[S, E]) []Step[S, E] {
		var took []Step[S, E]
		o := opts
		observer := opts.Observer
		o.Observer = func(st fsm.Step[S, E, D]) {
			took = append(took, StepOf(st))
			if observer != nil {
				observer(st)
			}
		}
		m, err := fsm.New(spec, o)
		if err != nil {
			return nil
		}
		for _, st := range p.Steps {
			if m.FireWith(context.Background(), st.Event, data(st)) != nil {
				break
			}
		}
		return took
	}
}
