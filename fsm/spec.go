package fsm

import (
	"cmp"
	"fmt"
	"slices"
)

// State declares one state of a [Spec].
type State[S ~string] struct {
	Name     S
	Doc      string // one line; used as diagram label/note
	Terminal bool   // no transition may leave it
	// Alarm draws the state in the diagrams' alarm colour (red): a state
	// an operator should notice. It has no effect on the machine.
	Alarm bool
	// Parent, if set, names the superstate this state lies inside: the
	// transitions declared from Parent (and from its own ancestors) apply
	// to this state too, unless it declares its own for the same event
	// (see [Spec.Flatten]). A state that is some state's Parent is a
	// superstate and never the machine's current state.
	Parent S
	// Initial names, for a superstate, the descendant a transition into
	// the superstate lands in (followed down to a leaf when it is a
	// superstate itself). It is required on a superstate that is the
	// target of a transition or the Spec's Initial, and forbidden on a
	// leaf.
	Initial S
}

// Event declares one event of a [Spec].
type Event[E ~string] struct {
	Name E
	Doc  string
}

// Transition says that Event moves the machine from any of the From states
// to To. A transition whose To is one of its From states is a self-loop; it
// is a real transition (see [Machine.Fire]).
//
// Several transitions may share a (from, event) pair when all but the last
// have a Guard: the machine takes the first, in declaration order, whose
// Guard accepts the data the event was fired with (a nil Guard accepts
// everything). So the table, not the code that fires the event, chooses
// among the outcomes of one event.
type Transition[S ~string, E ~string, D any] struct {
	Event E
	From  []S
	To    S
	// Guard, if set, decides from the event's data whether this transition
	// is taken. It must be a pure function of its argument: it runs on the
	// firing goroutine before anything changes, and may run for a
	// transition that is then not taken.
	Guard func(D) bool
	// When names the Guard's condition, as diagrams and errors show it
	// ("event [when]"). It is required with a Guard and forbidden without.
	When string
}

// Label is the transition's name in diagrams: "event" or "event [when]".
func (t Transition[S, E, D]) Label() string {
	if t.When == "" {
		return string(t.Event)
	}
	return string(t.Event) + " [" + t.When + "]"
}

// Spec is the declaration of a state machine: the single table that
// [New], [Spec.DOT], [Spec.Mermaid] and tests all read. S names its states,
// E its events, and D is the data an event carries ([Machine.FireWith]):
// guards read it, and callbacks and the observer receive it in [Step].
// A machine whose events carry nothing uses struct{}.
//
// The order of declarations carries no meaning, except among the guarded
// transitions of one (from, event) pair, which are tried in order: machines
// and diagrams built from two Specs that differ only in the order of other
// declarations are identical.
type Spec[S ~string, E ~string, D any] struct {
	Name        string
	Initial     S
	States      []State[S]
	Events      []Event[E]
	Transitions []Transition[S, E, D]
}

// Validate reports the first problem of the table as a [*SpecError] naming
// the offending entry (it matches errors.Is(err, ErrInvalidSpec)), or nil.
//
// It rejects: an empty spec name; empty state or event names; duplicate
// state or event declarations; a state used (Initial, From, To) but not
// declared; an event used but not declared; a declared event never used;
// a (from, event) pair whose transitions are not all guarded but the last
// (an unguarded transition ends the pair); a Guard without When or When
// without Guard; two guarded transitions of one pair with the same When;
// a state unreachable from Initial; a transition out of a terminal state;
// a transition with no From.
//
// With superstates (see [State.Parent]) it also rejects: an undeclared
// Parent; a Parent chain that loops; an Initial on a leaf, naming an
// undeclared state, or naming a state that is not a descendant; a
// superstate's Initial that is a superstate without an Initial of its
// own; a terminal superstate; a transition into (or a Spec Initial that
// is) a superstate without an Initial; a superstate's Initial that
// nothing enters (no transition targets the superstate, and it is neither
// the Spec's Initial nor the Initial of a superstate entered), which the
// diagrams would draw as a way in that the machine never takes; a superstate's transition that
// would leave a terminal leaf inside it; and, for every leaf and event,
// the ambiguities nesting allows: a condition (When) named at two levels
// that are both tried, an ancestor's guarded transition hidden by a
// nearer unguarded one when no nearer level names the same condition
// (the nearer transition would silently drop that outcome; name the
// condition on the nearer level too, or guard the nearer transition), and
// a transition hidden from every leaf it applies to. Reachability is over
// leaves: a superstate is reachable when one of its leaves is.
//
// Checks run in a fixed order (name, states, events, initial, parents,
// transitions in declaration order, unused events, unused Initials,
// nesting, unreachable states), so the same Spec always yields the same error.
func (s Spec[S, E, D]) Validate() error {
	fail := func(entry, format string, args ...any) error {
		return &SpecError{Spec: s.Name, Entry: entry, Reason: fmt.Sprintf(format, args...)}
	}
	if s.Name == "" {
		return fail("Name", "is empty; name the machine, it titles diagrams and errors")
	}

	states := make(map[S]int, len(s.States))
	for i, st := range s.States {
		if st.Name == "" {
			return fail(fmt.Sprintf("States[%d]", i), "has an empty name")
		}
		if j, dup := states[st.Name]; dup {
			return fail(fmt.Sprintf("States[%d] %q", i, st.Name), "duplicates States[%d]; declare each state once", j)
		}
		states[st.Name] = i
	}
	events := make(map[E]int, len(s.Events))
	for i, ev := range s.Events {
		if ev.Name == "" {
			return fail(fmt.Sprintf("Events[%d]", i), "has an empty name")
		}
		if j, dup := events[ev.Name]; dup {
			return fail(fmt.Sprintf("Events[%d] %q", i, ev.Name), "duplicates Events[%d]; declare each event once", j)
		}
		events[ev.Name] = i
	}

	if s.Initial == "" {
		return fail("Initial", "is empty; name the state the machine starts in")
	}
	if _, ok := states[s.Initial]; !ok {
		return fail(fmt.Sprintf("Initial %q", s.Initial), "is not a declared state; add it to States")
	}

	if err := s.validateTree(states); err != nil {
		return err
	}
	tr := s.tree()

	type pair struct {
		from S
		ev   E
	}
	type arm struct {
		last  int             // the latest transition of the pair
		ended bool            // an unguarded transition closed the pair
		whens map[string]bool // the When of every guarded transition
	}
	seen := make(map[pair]*arm)
	used := make(map[E]bool, len(s.Events))
	for i, t := range s.Transitions {
		entry := fmt.Sprintf("Transitions[%d] (event %q)", i, t.Event)
		if t.Event == "" {
			return fail(fmt.Sprintf("Transitions[%d]", i), "has an empty event name")
		}
		if t.Guard != nil && t.When == "" {
			return fail(entry, "has a Guard but no When; name the condition, diagrams and errors show it")
		}
		if t.Guard == nil && t.When != "" {
			return fail(entry, "has When %q but no Guard; add the Guard or drop the When", t.When)
		}
		if _, ok := events[t.Event]; !ok {
			return fail(entry, "event %q is not declared; add it to Events", t.Event)
		}
		used[t.Event] = true
		if len(t.From) == 0 {
			return fail(entry, "has no From state")
		}
		if _, ok := states[t.To]; !ok {
			return fail(entry, "target state %q is not declared; add it to States", t.To)
		}
		if _, ok := tr.initial[t.To]; !ok && len(tr.children[t.To]) > 0 {
			return fail(entry, "targets superstate %q, which has no Initial child; set its Initial to the state the transition should enter", t.To)
		}
		for _, from := range t.From {
			si, ok := states[from]
			if !ok {
				return fail(entry, "source state %q is not declared; add it to States", from)
			}
			if s.States[si].Terminal {
				return fail(entry, "leaves terminal state %q; terminal states have no outgoing transitions", from)
			}
			p := pair{from, t.Event}
			a := seen[p]
			switch {
			case a == nil:
				a = &arm{last: -1, whens: map[string]bool{}}
				seen[p] = a
			case a.last == i:
				return fail(entry, "lists source state %q twice", from)
			case a.ended:
				return fail(entry, "duplicates Transitions[%d] for (from %q, event %q); a (from, event) pair must have one target, or guards on all of its transitions but the last", a.last, from, t.Event)
			case t.When != "" && a.whens[t.When]:
				return fail(entry, "repeats the guard %q of Transitions[%d] for (from %q, event %q); name each condition once", t.When, a.last, from, t.Event)
			}
			a.last, a.ended = i, t.Guard == nil
			a.whens[t.When] = true
		}
	}
	for i, ev := range s.Events {
		if !used[ev.Name] {
			return fail(fmt.Sprintf("Events[%d] %q", i, ev.Name), "is never used by a transition; remove it or add a transition")
		}
	}

	if err := s.validateEntries(tr); err != nil {
		return err
	}
	if err := s.validateNesting(tr); err != nil {
		return err
	}

	reach := s.reachable()
	for i, st := range s.States {
		if !reach[st.Name] {
			return fail(fmt.Sprintf("States[%d] %q", i, st.Name), "is unreachable from initial state %q", s.Initial)
		}
	}
	return nil
}

// reachable returns the states reachable from Initial (Initial included):
// the leaves the flattened edges reach from Initial's leaf, and every
// superstate containing one of them.
func (s Spec[S, E, D]) reachable() map[S]bool {
	t := s.tree()
	start := t.leaf(s.Initial)
	reach := map[S]bool{}
	mark := func(leaf S) {
		for _, st := range t.chain(leaf) {
			reach[st] = true
		}
	}
	mark(start)
	seen := map[S]bool{start: true}
	work := []S{start}
	for len(work) > 0 {
		cur := work[len(work)-1]
		work = work[:len(work)-1]
		for _, e := range s.flattenLeaf(t, cur) {
			if !seen[e.To] {
				seen[e.To] = true
				mark(e.To)
				work = append(work, e.To)
			}
		}
	}
	return reach
}

// State returns the declaration of the named state.
func (s Spec[S, E, D]) State(name S) (State[S], bool) {
	for _, st := range s.States {
		if st.Name == name {
			return st, true
		}
	}
	return State[S]{}, false
}

// Event returns the declaration of the named event.
func (s Spec[S, E, D]) Event(name E) (Event[E], bool) {
	for _, ev := range s.Events {
		if ev.Name == name {
			return ev, true
		}
	}
	return Event[E]{}, false
}

// Targets returns, for every event permitted in state from, the leaves it
// may lead to, in the order their guards are tried (one state for an
// unguarded event); a transition into a superstate leads to its Initial
// leaf. It returns an empty, non-nil map for terminal or unknown states.
func (s Spec[S, E, D]) Targets(from S) map[E][]S {
	out := make(map[E][]S)
	t := s.tree()
	for _, tr := range s.Exits(from) {
		out[tr.Event] = append(out[tr.Event], t.leaf(tr.To))
	}
	return out
}

// Exits returns the transitions that leave state from, in the order their
// guards are tried: those declared from it in declaration order, then
// those of its superstates, innermost first, up to the first unguarded
// transition of each event (see [Spec.Flatten]). For a flat Spec that is
// the declaration order of the transitions from it.
func (s Spec[S, E, D]) Exits(from S) []Transition[S, E, D] {
	var out []Transition[S, E, D]
	t := s.tree()
	var arms []Edge[S, E]
	byEvent := s.leafArms(t, from)
	for _, ev := range sortedKeys(byEvent) {
		all := byEvent[ev]
		arms = append(arms, all[:s.cut(all)]...)
	}
	slices.SortStableFunc(arms, func(a, b Edge[S, E]) int {
		// Declaration order within a level, inner levels first.
		return cmp.Or(cmp.Compare(slices.Index(t.chain(from), a.Source), slices.Index(t.chain(from), b.Source)), cmp.Compare(a.Transition, b.Transition))
	})
	for _, a := range arms {
		out = append(out, s.Transitions[a.Transition])
	}
	return out
}

// Sources returns the states with a transition into to, sorted and
// deduplicated. A self-loop makes to one of its own sources.
func (s Spec[S, E, D]) Sources(to S) []S {
	var out []S
	for _, t := range s.Transitions {
		if t.To == to {
			out = append(out, t.From...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// clone returns a deep copy, so that a Machine cannot be changed through
// slices its caller still holds, and callers of [Machine.Spec] cannot change
// the Machine.
func (s Spec[S, E, D]) clone() Spec[S, E, D] {
	c := s
	c.States = slices.Clone(s.States)
	c.Events = slices.Clone(s.Events)
	c.Transitions = make([]Transition[S, E, D], len(s.Transitions))
	for i, t := range s.Transitions {
		t.From = slices.Clone(t.From)
		c.Transitions[i] = t
	}
	if s.Transitions == nil {
		c.Transitions = nil
	}
	return c
}
