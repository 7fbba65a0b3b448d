package fsm

import (
	"maps"
	"slices"
)

// Superstates
//
// A State that some other State names as its Parent is a superstate: it
// groups its descendants, is never the machine's current state (that is
// always a leaf: a state with no children), and a transition declared
// From it applies to every leaf inside it. A transition into a superstate
// enters its Initial child (recursively, down to a leaf).
//
// For a leaf L and an event, the machine tries the transitions declared
// from L, then those declared from L's parent, and so on outwards, each
// level in declaration order, and takes the first whose guard accepts: a
// child's transitions win over its parent's, the nearest ancestor's over a
// farther one's. An unguarded transition ends the search, so the levels
// beyond it are hidden from L (an override). [Spec.Validate] rejects the
// hiding of an ancestor's guarded transition whose condition (When) none
// of the levels tried before names (the child would silently drop that
// outcome), a condition named twice among the levels tried, and a
// transition hidden from every leaf it would apply to.

// Edge is one transition of the flattened table: what the machine does in
// leaf state From on Event when the guard named When (empty for an
// unguarded transition) is the first to accept. [Spec.Flatten] lists them.
type Edge[S ~string, E ~string] struct {
	From  S // a leaf state
	Event E
	When  string
	To    S // the leaf the machine lands in: Target, or Target's Initial descendant
	// Source is the state the transition was declared From: From itself or
	// one of its ancestors.
	Source S
	// Target is the transition's declared To, possibly a superstate.
	Target S
	// Transition is the transition's index in Spec.Transitions.
	Transition int
}

// Label is the edge's name in diagrams: "event" or "event [when]".
func (e Edge[S, E]) Label() string {
	if e.When == "" {
		return string(e.Event)
	}
	return string(e.Event) + " [" + e.When + "]"
}

// Drawn is the arrow of the diagrams that draws e: the declared transition
// from Source to Target.
func (e Edge[S, E]) Drawn() DrawnEdge[S] {
	return DrawnEdge[S]{From: e.Source, To: e.Target, Label: e.Label()}
}

// tree is the parent relation of a Spec's states.
type tree[S ~string] struct {
	parent   map[S]S
	children map[S][]S // sorted by name
	initial  map[S]S
}

// tree builds the parent relation from the declarations. It trusts them:
// Validate checks them first.
func (s Spec[S, E, D]) tree() tree[S] {
	t := tree[S]{parent: map[S]S{}, children: map[S][]S{}, initial: map[S]S{}}
	for _, st := range s.States {
		if st.Parent != "" {
			t.parent[st.Name] = st.Parent
			t.children[st.Parent] = append(t.children[st.Parent], st.Name)
		}
		if st.Initial != "" {
			t.initial[st.Name] = st.Initial
		}
	}
	for _, c := range t.children {
		slices.Sort(c)
	}
	return t
}

// chain returns st and its ancestors, innermost first. It stops at a
// cycle, which Validate rejects.
func (t tree[S]) chain(st S) []S {
	out := []S{st}
	for p, ok := t.parent[st]; ok && !slices.Contains(out, p); p, ok = t.parent[p] {
		out = append(out, p)
	}
	return out
}

// leaf follows Initial children from st down to a leaf. It stops at a
// superstate without one, or at a cycle, which Validate rejects.
func (t tree[S]) leaf(st S) S {
	for range len(t.parent) + 1 {
		next, ok := t.initial[st]
		if !ok || len(t.children[st]) == 0 {
			return st
		}
		st = next
	}
	return st
}

// contains reports whether st is outer or lies inside it.
func (t tree[S]) contains(outer, st S) bool { return slices.Contains(t.chain(st), outer) }

// Superstate reports whether some declared state names st as its Parent.
func (s Spec[S, E, D]) Superstate(st S) bool {
	for _, c := range s.States {
		if c.Parent == st {
			return true
		}
	}
	return false
}

// Ancestors returns the superstates that contain st, innermost first;
// none for a top-level state.
func (s Spec[S, E, D]) Ancestors(st S) []S { return s.tree().chain(st)[1:] }

// Contains reports whether st is outer or a descendant of outer.
func (s Spec[S, E, D]) Contains(outer, st S) bool { return s.tree().contains(outer, st) }

// Leaf returns the leaf a transition into st lands in: st itself for a
// leaf, otherwise st's Initial child followed down to a leaf.
func (s Spec[S, E, D]) Leaf(st S) S { return s.tree().leaf(st) }

// Leaves returns the states that are not superstates, sorted by name: the
// states a machine can be in.
func (s Spec[S, E, D]) Leaves() []S {
	t := s.tree()
	var out []S
	for _, st := range s.States {
		if len(t.children[st.Name]) == 0 {
			out = append(out, st.Name)
		}
	}
	slices.Sort(out)
	return out
}

// Flatten returns the table as the machine runs it: for every leaf (sorted
// by name) and every event it accepts there (sorted), the edges in the
// order their guards are tried, superstates' transitions copied down to
// their leaves and cut off after the first unguarded one. A flat Spec (no
// Parent declared) flattens to its own transitions, one Edge per From.
func (s Spec[S, E, D]) Flatten() []Edge[S, E] {
	var out []Edge[S, E]
	t := s.tree()
	for _, leaf := range s.Leaves() {
		out = append(out, s.flattenLeaf(t, leaf)...)
	}
	return out
}

// flattenLeaf returns the edges of one leaf, by event (sorted), in try
// order, cut off after the first unguarded one.
func (s Spec[S, E, D]) flattenLeaf(t tree[S], leaf S) []Edge[S, E] {
	all := s.leafArms(t, leaf)
	var out []Edge[S, E]
	for _, ev := range slices.Sorted(maps.Keys(all)) {
		arms := all[ev]
		out = append(out, arms[:s.cut(arms)]...)
	}
	return out
}

// leafArms returns, per event, the edges of leaf from every level of its
// chain, innermost level first, each level in declaration order, none cut
// off.
func (s Spec[S, E, D]) leafArms(t tree[S], leaf S) map[E][]Edge[S, E] {
	out := map[E][]Edge[S, E]{}
	for _, level := range t.chain(leaf) {
		for i, tr := range s.Transitions {
			if slices.Contains(tr.From, level) {
				out[tr.Event] = append(out[tr.Event], Edge[S, E]{
					From: leaf, Event: tr.Event, When: tr.When, To: t.leaf(tr.To),
					Source: level, Target: tr.To, Transition: i,
				})
			}
		}
	}
	return out
}

// cut returns how many of arms are tried: up to and including the first
// unguarded one.
func (s Spec[S, E, D]) cut(arms []Edge[S, E]) int {
	for i, a := range arms {
		if s.Transitions[a.Transition].Guard == nil {
			return i + 1
		}
	}
	return len(arms)
}
