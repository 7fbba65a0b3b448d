package fsmtest

import (
	"strings"

	"github.com/mcpfsm/mcpfsm/fsm"
)

// Target is one branch of a table: a declared transition, from one of its
// From states (a superstate's transition is one target, whichever leaf
// inside it takes it), with its guard's condition. Two targets with the
// same From, Event and To but different conditions are one edge of the
// diagram and two branches.
type Target[S ~string, E ~string] struct {
	From       S // as declared: a leaf or a superstate
	Event      E
	When       string // the guard's condition; empty when unguarded
	To         S      // as declared: a leaf or a superstate
	Transition int    // the index in Spec.Transitions
}

// String names the target as errors and reports show it:
// "from --event [when]--> to".
func (t Target[S, E]) String() string {
	label := string(t.Event)
	if t.When != "" {
		label += " [" + t.When + "]"
	}
	return string(t.From) + " --" + label + "--> " + string(t.To)
}

// Step is one transition as a test observes it: between leaf states,
// with the condition of the guard that chose it (empty for none).
type Step[S ~string, E ~string] struct {
	From  S
	Event E
	When  string
	To    S
}

// StepOf is the Step of a transition a machine took.
func StepOf[S ~string, E ~string, D any](st fsm.Step[S, E, D]) Step[S, E] {
	return Step[S, E]{From: st.From, Event: st.Event, When: st.When, To: st.To}
}

// Path is a shortest run from the initial state that ends by taking
// Target: Steps[len(Steps)-1] is the step that takes it. A step reached
// through a guarded transition, or one whose leaf tries guards of its
// own before an inherited transition, needs the data that makes exactly
// that guard the first to accept; the driver chooses it.
type Path[S ~string, E ~string] struct {
	Target Target[S, E]
	Steps  []Step[S, E]
}

// Events returns the events of the path's steps, in order.
func (p Path[S, E]) Events() []E {
	out := make([]E, len(p.Steps))
	for i, st := range p.Steps {
		out[i] = st.Event
	}
	return out
}

// String is the path as "target via ev1, ev2, ...".
func (p Path[S, E]) String() string {
	evs := make([]string, len(p.Steps))
	for i, st := range p.Steps {
		evs[i] = string(st.Event)
		if st.When != "" {
			evs[i] += " [" + st.When + "]"
		}
	}
	return p.Target.String() + " via " + strings.Join(evs, ", ")
}

// Targets returns every branch of spec, in declaration order of the
// transitions and, within one, of its From states.
func Targets[S ~string, E ~string, D any](spec fsm.Spec[S, E, D]) []Target[S, E] {
	var out []Target[S, E]
	for i, tr := range spec.Transitions {
		for _, from := range tr.From {
			out = append(out, Target[S, E]{From: from, Event: tr.Event, When: tr.When, To: tr.To, Transition: i})
		}
	}
	return out
}

// Paths derives, by breadth-first search over the flattened table
// ([fsm.Spec.Flatten]) from the initial state's leaf, the shortest event
// path to every target of spec that has one, in the order of [Targets].
// A target no path reaches (its states are unreachable, or every leaf it
// applies to overrides it) has no Path; [Coverage] reports it. The search
// visits edges in Flatten's order, so the paths depend only on the
// table.
func Paths[S ~string, E ~string, D any](spec fsm.Spec[S, E, D]) []Path[S, E] {
	flat := spec.Flatten()
	start := spec.Leaf(spec.Initial)
	// prev[leaf] is the step that first reached leaf.
	prev := map[S]*Step[S, E]{start: nil}
	queue := []S{start}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, e := range flat {
			if e.From != cur {
				continue
			}
			if _, seen := prev[e.To]; !seen {
				prev[e.To] = &Step[S, E]{From: e.From, Event: e.Event, When: e.When, To: e.To}
				queue = append(queue, e.To)
			}
		}
	}
	to := func(leaf S) []Step[S, E] {
		var out []Step[S, E]
		for st := prev[leaf]; st != nil; st = prev[st.From] {
			out = append(out, *st)
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
		return out
	}
	var out []Path[S, E]
	for _, tg := range Targets(spec) {
		best := -1
		var bestSteps []Step[S, E]
		for _, e := range flat {
			if e.Transition != tg.Transition || e.Source != tg.From {
				continue
			}
			if _, ok := prev[e.From]; !ok {
				continue
			}
			steps := append(to(e.From), Step[S, E]{From: e.From, Event: e.Event, When: e.When, To: e.To})
			if best < 0 || len(steps) < best {
				best, bestSteps = len(steps), steps
			}
		}
		if best >= 0 {
			out = append(out, Path[S, E]{Target: tg, Steps: bestSteps})
		}
	}
	return out
}
