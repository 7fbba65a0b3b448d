package fsm_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/mcpfsm/mcpfsm/fsm"
)

// genTree draws a random nested spec: state i's Parent, if any, is a
// state before it (so the tree has no cycle), every superstate has an
// Initial among its descendants, random transitions (guarded or not,
// from leaves and superstates, into leaves and superstates) come first,
// and a chain of unguarded transitions through the leaves keeps most of
// them reachable. The spec may still be invalid; the guard "d==k"
// accepts the data k.
func genTree(t *rapid.T) fsm.Spec[string, string, int] {
	n := rapid.IntRange(1, 7).Draw(t, "states")
	nEvents := rapid.IntRange(1, 3).Draw(t, "events")
	name := func(i int) string { return fmt.Sprintf("s%d", i) }
	states := make([]fsm.State[string], n)
	children := make([][]int, n)
	for i := range n {
		states[i].Name = name(i)
		if i > 0 && rapid.Bool().Draw(t, "nested?") {
			p := rapid.IntRange(0, i-1).Draw(t, "parent")
			states[i].Parent = name(p)
			children[p] = append(children[p], i)
		}
	}
	var leaves []int
	for i := range n {
		if len(children[i]) == 0 {
			leaves = append(leaves, i)
			continue
		}
		states[i].Initial = name(children[i][rapid.IntRange(0, len(children[i])-1).Draw(t, "initial")])
	}
	spec := fsm.Spec[string, string, int]{Name: "tree", Initial: name(0), States: states}
	for e := range nEvents {
		spec.Events = append(spec.Events, fsm.Event[string]{Name: fmt.Sprintf("e%d", e)})
	}
	for range rapid.IntRange(0, 8).Draw(t, "transitions") {
		tr := fsm.Transition[string, string, int]{
			Event: fmt.Sprintf("e%d", rapid.IntRange(0, nEvents-1).Draw(t, "event")),
			From:  []string{name(rapid.IntRange(0, n-1).Draw(t, "from"))},
			To:    name(rapid.IntRange(0, n-1).Draw(t, "to")),
		}
		if k := rapid.IntRange(0, 3).Draw(t, "guard"); k > 0 {
			tr.Guard, tr.When = func(d int) bool { return d == k }, fmt.Sprintf("d==%d", k)
		}
		spec.Transitions = append(spec.Transitions, tr)
	}
	first := spec.Leaf(spec.Initial)
	prev := first
	for _, l := range leaves {
		if name(l) == first {
			continue
		}
		spec.Transitions = append(spec.Transitions, fsm.Transition[string, string, int]{
			Event: fmt.Sprintf("e%d", rapid.IntRange(0, nEvents-1).Draw(t, "chain event")), From: []string{prev}, To: name(l),
		})
		prev = name(l)
	}
	return spec
}

// refChain returns st and its ancestors, innermost first, read from the
// declarations alone.
func refChain(spec fsm.Spec[string, string, int], st string) []string {
	out := []string{st}
	for {
		s, _ := spec.State(out[len(out)-1])
		if s.Parent == "" {
			return out
		}
		out = append(out, s.Parent)
	}
}

// refLeaf follows Initial children down to a leaf.
func refLeaf(spec fsm.Spec[string, string, int], st string) string {
	for {
		s, _ := spec.State(st)
		if s.Initial == "" {
			return st
		}
		st = s.Initial
	}
}

// refStep is the reference semantics: the first transition, over st's
// own and then its ancestors', each in declaration order, whose guard
// accepts d.
func refStep(spec fsm.Spec[string, string, int], st, ev string, d int) (fsm.Transition[string, string, int], bool) {
	for _, level := range refChain(spec, st) {
		for _, tr := range spec.Transitions {
			if tr.Event == ev && slices.Contains(tr.From, level) && (tr.Guard == nil || tr.Guard(d)) {
				return tr, true
			}
		}
	}
	return fsm.Transition[string, string, int]{}, false
}

// TestNestingProperties: on random trees, a valid spec's machine takes
// the reference transition (a child's wins, then the nearest ancestor's),
// runs each OnExit once, innermost first, up to but not including the
// innermost common superstate, then each OnEnter once, outermost first,
// down to the target leaf; a self-transition leaves and enters the leaf
// alone. An invalid spec is reported as a SpecError naming its entry.
func TestNestingProperties(t *testing.T) {
	valid := 0
	rapid.Check(t, func(t *rapid.T) {
		spec := genTree(t)
		err := spec.Validate()
		if err != nil {
			var se *fsm.SpecError
			if !errors.As(err, &se) || se.Entry == "" || !errors.Is(err, fsm.ErrInvalidSpec) {
				t.Fatalf("Validate: %v, want a SpecError naming its entry", err)
			}
			return
		}
		valid++
		var log []string
		type cb = func(context.Context, fsm.Step[string, string, int])
		opts := fsm.Options[string, string, int]{OnEnter: map[string]cb{}, OnExit: map[string]cb{}}
		for _, st := range spec.States {
			name := st.Name
			opts.OnEnter[name] = func(context.Context, fsm.Step[string, string, int]) { log = append(log, "enter:"+name) }
			opts.OnExit[name] = func(context.Context, fsm.Step[string, string, int]) { log = append(log, "exit:"+name) }
		}
		m, err := fsm.New(spec, opts)
		if err != nil {
			t.Fatalf("New of a valid spec: %v", err)
		}
		if want := refLeaf(spec, spec.Initial); m.State() != want {
			t.Fatalf("starts in %s, want %s", m.State(), want)
		}
		for range rapid.IntRange(1, 12).Draw(t, "fires") {
			from := m.State()
			ev := spec.Events[rapid.IntRange(0, len(spec.Events)-1).Draw(t, "fire")].Name
			d := rapid.IntRange(0, 3).Draw(t, "data")
			tr, ok := refStep(spec, from, ev, d)
			log = nil
			err := m.FireWith(context.Background(), ev, d)
			if !ok {
				if !errors.Is(err, fsm.ErrInvalidEvent) || m.State() != from || len(log) > 0 {
					t.Fatalf("%s on %s(%d): err %v, now %s, callbacks %v; the reference refuses it", from, ev, d, err, m.State(), log)
				}
				continue
			}
			to := refLeaf(spec, tr.To)
			if err != nil || m.State() != to {
				t.Fatalf("%s on %s(%d): err %v, now %s; the reference takes %s [%s] to %s", from, ev, d, err, m.State(), tr.From, tr.When, to)
			}
			up, down := refChain(spec, from), refChain(spec, to)
			if from == to {
				up, down = up[:1], down[:1]
			}
			for from != to && len(up) > 0 && len(down) > 0 && up[len(up)-1] == down[len(down)-1] {
				up, down = up[:len(up)-1], down[:len(down)-1]
			}
			var want []string
			for _, s := range up {
				want = append(want, "exit:"+s)
			}
			for _, s := range slices.Backward(down) {
				want = append(want, "enter:"+s)
			}
			if diff := cmp.Diff(want, log); diff != "" {
				t.Fatalf("%s on %s(%d) to %s: callbacks (-want +got):\n%s", from, ev, d, to, diff)
			}
			if !m.In(to) || !m.In(refChain(spec, to)[len(refChain(spec, to))-1]) {
				t.Fatalf("In disagrees with the chain of %s", to)
			}
		}
	})
	t.Logf("%d valid specs drawn", valid)
	if valid == 0 {
		t.Error("no drawn spec was valid; the generator tests nothing")
	}
}

// TestNestingRejections: a Parent loop, a superstate target without an
// Initial and a superstate's edge that every child overrides are
// rejected in any random tree that has one.
func TestNestingRejections(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec := genTree(t)
		baseValid := spec.Validate() == nil
		var supers []int
		for i, st := range spec.States {
			if spec.Superstate(st.Name) {
				supers = append(supers, i)
			}
		}
		switch rapid.IntRange(0, 2).Draw(t, "defect") {
		case 0: // put a state inside one of its descendants, or itself
			i := rapid.IntRange(0, len(spec.States)-1).Draw(t, "looped")
			var inside []string
			for _, st := range spec.States {
				if spec.Contains(spec.States[i].Name, st.Name) {
					inside = append(inside, st.Name)
				}
			}
			spec.States[i].Parent = inside[rapid.IntRange(0, len(inside)-1).Draw(t, "new parent")]
			err := spec.Validate()
			if err == nil || !strings.Contains(err.Error(), "its Parent chain loops") {
				t.Fatalf("a Parent loop through %s: Validate = %v", spec.States[i].Name, err)
			}
		case 1: // a transition into a superstate that has no Initial
			if len(supers) == 0 {
				return
			}
			i := supers[rapid.IntRange(0, len(supers)-1).Draw(t, "super")]
			spec.States[i].Initial = ""
			spec.Transitions = append(spec.Transitions, fsm.Transition[string, string, int]{Event: spec.Events[0].Name, From: []string{spec.States[0].Name}, To: spec.States[i].Name})
			err := spec.Validate()
			if !errors.Is(err, fsm.ErrInvalidSpec) || baseValid && !strings.Contains(err.Error(), "without an Initial") && !strings.Contains(err.Error(), "has no Initial child") {
				t.Fatalf("a transition into %s, which has no Initial: Validate = %v", spec.States[i].Name, err)
			}
		case 2: // a superstate's edge that every leaf inside overrides
			if len(supers) == 0 {
				return
			}
			i := supers[rapid.IntRange(0, len(supers)-1).Draw(t, "super")]
			ev := "override"
			spec.Events = append(spec.Events, fsm.Event[string]{Name: ev})
			spec.Transitions = append(spec.Transitions, fsm.Transition[string, string, int]{Event: ev, From: []string{spec.States[i].Name}, To: spec.States[0].Name})
			for _, leaf := range spec.Leaves() {
				if spec.Contains(spec.States[i].Name, leaf) {
					spec.Transitions = append(spec.Transitions, fsm.Transition[string, string, int]{Event: ev, From: []string{leaf}, To: spec.States[0].Name})
				}
			}
			err := spec.Validate()
			if err == nil || baseValid && !strings.Contains(err.Error(), "is overridden by every state inside it") {
				t.Fatalf("every leaf inside %s overrides its %s: Validate = %v", spec.States[i].Name, ev, err)
			}
		}
	})
}
