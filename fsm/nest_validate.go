package fsm

import (
	"fmt"
	"slices"
	"strings"
)

// validateTree checks the Parent and Initial declarations; states maps
// every declared name to its index.
func (s Spec[S, E, D]) validateTree(states map[S]int) error {
	fail := func(i int, format string, args ...any) error {
		return &SpecError{Spec: s.Name, Entry: fmt.Sprintf("States[%d] %q", i, s.States[i].Name), Reason: fmt.Sprintf(format, args...)}
	}
	for i, st := range s.States {
		if st.Parent == "" {
			continue
		}
		if _, ok := states[st.Parent]; !ok {
			return fail(i, "Parent %q is not a declared state; add it to States", st.Parent)
		}
		path := []string{string(st.Name)}
		for p := st.Parent; p != ""; p = s.States[states[p]].Parent {
			path = append(path, string(p))
			if p == st.Name {
				return fail(i, "its Parent chain loops (%s); a state cannot lie inside itself", strings.Join(path, " -> "))
			}
			if len(path) > len(s.States)+1 {
				break // a loop above st, reported for a state on it
			}
		}
	}
	t := s.tree()
	for i, st := range s.States {
		super := len(t.children[st.Name]) > 0
		if super && st.Terminal {
			return fail(i, "is a superstate (%s lie inside it) and Terminal; only a leaf can be terminal", quoteAll(t.children[st.Name]))
		}
		if st.Initial == "" {
			continue
		}
		if !super {
			return fail(i, "has Initial %q but no state names it as Parent; drop the Initial, or declare its children", st.Initial)
		}
		j, ok := states[st.Initial]
		if !ok {
			return fail(i, "Initial %q is not a declared state; add it to States", st.Initial)
		}
		if st.Initial == st.Name || !t.contains(st.Name, st.Initial) {
			return fail(i, "Initial %q is not inside it; name one of its descendants", st.Initial)
		}
		if inner := s.States[j]; len(t.children[inner.Name]) > 0 && inner.Initial == "" {
			return fail(i, "Initial %q is a superstate without an Initial of its own; set %q's Initial", st.Initial, st.Initial)
		}
	}
	if _, ok := t.initial[s.Initial]; !ok && len(t.children[s.Initial]) > 0 {
		return &SpecError{Spec: s.Name, Entry: fmt.Sprintf("Initial %q", s.Initial),
			Reason: "is a superstate without an Initial child; set its Initial, or start in a leaf"}
	}
	return nil
}

// validateEntries rejects a superstate's Initial that nothing enters: a
// superstate is entered when a transition targets it, when it is the
// Spec's Initial, or when it is the Initial of a superstate entered.
func (s Spec[S, E, D]) validateEntries(t tree[S]) error {
	entered := map[S]bool{}
	enter := func(st S) {
		for !entered[st] {
			entered[st] = true
			next, ok := t.initial[st]
			if !ok {
				return
			}
			st = next
		}
	}
	enter(s.Initial)
	for _, tr := range s.Transitions {
		enter(tr.To)
	}
	for i, st := range s.States {
		if st.Initial != "" && !entered[st.Name] {
			return &SpecError{Spec: s.Name, Entry: fmt.Sprintf("States[%d] %q", i, st.Name), Reason: fmt.Sprintf(
				"has Initial %q, but nothing enters %q (no transition targets it, and it is neither the Spec's Initial nor the Initial of a superstate entered), so the diagrams would draw a way in that the machine never takes; drop the Initial",
				st.Initial, st.Name)}
		}
	}
	return nil
}

// validateNesting checks, for every leaf and event, what the superstates'
// transitions add to the flat checks: no transition leaves a terminal
// leaf, no condition is tried twice, no ancestor's condition is dropped
// by a nearer unguarded transition, and no transition is hidden from
// every leaf it applies to.
func (s Spec[S, E, D]) validateNesting(t tree[S]) error {
	fail := func(e Edge[S, E], format string, args ...any) error {
		return &SpecError{Spec: s.Name, Entry: fmt.Sprintf("Transitions[%d] (event %q)", e.Transition, e.Event), Reason: fmt.Sprintf(format, args...)}
	}
	type use struct {
		transition int
		source     S
	}
	used := map[use]bool{}
	for _, leaf := range s.Leaves() {
		st, _ := s.State(leaf)
		all := s.leafArms(t, leaf)
		for _, ev := range sortedKeys(all) {
			arms := all[ev]
			n := s.cut(arms)
			if st.Terminal && n > 0 {
				return fail(arms[0], "superstate %q's transition leaves terminal state %q inside it; terminal states have no outgoing transitions; move %q out of %q", arms[0].Source, leaf, leaf, arms[0].Source)
			}
			named := map[string]Edge[S, E]{}
			for _, a := range arms[:n] {
				used[use{a.Transition, a.Source}] = true
				if a.When == "" {
					continue
				}
				if b, dup := named[a.When]; dup && b.Source != a.Source {
					return fail(a, "repeats the guard %q of Transitions[%d] (from %q) for state %q: both are tried, inner first; name each condition once along a state's superstates", a.When, b.Transition, b.Source, leaf)
				}
				named[a.When] = a
			}
			for _, a := range arms[n:] {
				if _, ok := named[a.When]; a.When != "" && !ok {
					c := arms[n-1]
					return fail(a, "guard %q of superstate %q is hidden from %q by the unguarded Transitions[%d] (from %q), so it is never tried there; guard Transitions[%d] too, or declare the %q outcome on %q", a.When, a.Source, leaf, c.Transition, c.Source, c.Transition, a.When, c.Source)
				}
			}
		}
	}
	for i, tr := range s.Transitions {
		for _, from := range tr.From {
			if len(t.children[from]) > 0 && !used[use{i, from}] {
				return fail(Edge[S, E]{Transition: i, Event: tr.Event}, "from superstate %q is overridden by every state inside it, so it is never taken; remove it", from)
			}
		}
	}
	return nil
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func quoteAll[S ~string](names []S) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quote(string(n))
	}
	return strings.Join(q, ", ")
}
