package fsm

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	looplab "github.com/looplab/fsm"
)

// Compiled is a validated [Spec] with the lookup tables a [Machine] needs,
// built once. Any number of machines start from it with [Compiled.New] and
// share those tables, which nothing changes after Compile: a program that
// runs many machines of one spec (one per connection, say) pays for the
// tables once instead of once per machine. It is safe for concurrent use.
type Compiled[S ~string, E ~string, D any] struct {
	spec   Spec[S, E, D]
	exits  map[S]map[E][]arc[S, D] // per state and event, in guard order
	events map[S][]E               // per state, the permitted events, sorted
	names  map[E][]string          // per event, its engine event names
	descs  []looplab.EventDesc     // the engine's table
	index  map[S]int               // per state, its place in spec.States
	leaves map[S]bool              // the states a machine can be in
	chains map[S][]int             // per leaf, it and its superstates, innermost first, as indices

	spareMu sync.Mutex
	spares  []*engine[S, E, D] // engines of machines that rested, for the next build
	keep    int                // how many spares to keep: maxSpares, or 0 for the one machine of New
}

// maxSpares bounds the engines a Compiled keeps for its machines' builds:
// about as many as are built at once, so that a fleet of machines at rest
// holds a few engines in all rather than one each.
const maxSpares = 8

// takeSpare returns an engine a machine gave back when it rested, or nil.
func (c *Compiled[S, E, D]) takeSpare() *engine[S, E, D] {
	c.spareMu.Lock()
	defer c.spareMu.Unlock()
	n := len(c.spares)
	if n == 0 {
		return nil
	}
	e := c.spares[n-1]
	c.spares[n-1] = nil
	c.spares = c.spares[:n-1]
	return e
}

// putSpare keeps e for the next build, unless enough are kept.
func (c *Compiled[S, E, D]) putSpare(e *engine[S, E, D]) {
	c.spareMu.Lock()
	defer c.spareMu.Unlock()
	if len(c.spares) < c.keep {
		c.spares = append(c.spares, e)
	}
}

// arc is one transition out of one state, as the engine knows it.
type arc[S ~string, D any] struct {
	name  string // the engine's event name: the transition's Label
	to    S
	guard func(D) bool
	when  string
	// exit and enter are the states the transition leaves, innermost
	// first, and enters, outermost first, as indices into spec.States.
	exit, enter []int
}

// Compile validates spec (see [Spec.Validate]) and builds its tables. The
// result keeps a deep copy of spec.
func Compile[S ~string, E ~string, D any](spec Spec[S, E, D]) (*Compiled[S, E, D], error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	c := &Compiled[S, E, D]{
		keep:   maxSpares,
		spec:   spec.clone(),
		exits:  make(map[S]map[E][]arc[S, D], len(spec.States)),
		events: make(map[S][]E, len(spec.States)),
		names:  make(map[E][]string, len(spec.Events)),
		index:  make(map[S]int, len(spec.States)),
		chains: make(map[S][]int, len(spec.States)),
	}
	for i, st := range c.spec.States {
		c.index[st.Name] = i
	}
	t := c.spec.tree()
	c.leaves = make(map[S]bool, len(spec.States))
	for _, leaf := range c.spec.Leaves() {
		c.leaves[leaf] = true
		c.chains[leaf] = c.indices(t.chain(leaf))
	}
	type desc struct {
		name string
		to   S
	}
	srcs := map[desc][]string{}
	var order []desc
	for _, e := range c.spec.Flatten() {
		tr := c.spec.Transitions[e.Transition]
		name := tr.Label()
		if !slices.Contains(c.names[e.Event], name) {
			c.names[e.Event] = append(c.names[e.Event], name)
		}
		if c.exits[e.From] == nil {
			c.exits[e.From] = map[E][]arc[S, D]{}
		}
		exit, enter := c.path(t, e.From, e.To)
		c.exits[e.From][e.Event] = append(c.exits[e.From][e.Event], arc[S, D]{
			name: name, to: e.To, guard: tr.Guard, when: tr.When, exit: exit, enter: enter,
		})
		d := desc{name, e.To}
		if _, ok := srcs[d]; !ok {
			order = append(order, d)
		}
		srcs[d] = append(srcs[d], string(e.From))
	}
	for _, d := range order {
		c.descs = append(c.descs, looplab.EventDesc{Name: d.name, Src: srcs[d], Dst: string(d.to)})
	}
	for state, byEvent := range c.exits {
		c.events[state] = slices.Sorted(maps.Keys(byEvent))
	}
	return c, nil
}

// indices returns the places of states in spec.States.
func (c *Compiled[S, E, D]) indices(states []S) []int {
	out := make([]int, len(states))
	for i, st := range states {
		out[i] = c.index[st]
	}
	return out
}

// path returns the states a transition from leaf from to leaf to leaves,
// innermost first, and enters, outermost first, as indices: those below
// the innermost superstate containing both, which is neither left nor
// entered. A transition from a leaf to itself leaves and enters that leaf
// alone.
func (c *Compiled[S, E, D]) path(t tree[S], from, to S) (exit, enter []int) {
	up, down := t.chain(from), t.chain(to)
	if from == to {
		up, down = up[:1], down[:1]
	} else {
		for len(up) > 0 && len(down) > 0 && up[len(up)-1] == down[len(down)-1] {
			up, down = up[:len(up)-1], down[:len(down)-1]
		}
	}
	exit, enter = c.indices(up), c.indices(down)
	slices.Reverse(enter)
	return exit, enter
}

// New validates spec (see [Spec.Validate]) and opts, and returns a Machine in
// spec.Initial. The Machine keeps deep copies of spec and of the callback
// maps. An OnEnter or OnExit key that is not a declared state is reported
// as a [*SpecError] matching [ErrInvalidSpec]; nil entries are ignored.
// To start many machines of one spec, [Compile] it once and use
// [Compiled.New].
func New[S ~string, E ~string, D any](spec Spec[S, E, D], opts Options[S, E, D]) (*Machine[S, E, D], error) {
	c, err := Compile(spec)
	if err != nil {
		return nil, err
	}
	c.keep = 0 // its only machine: an engine kept for it would be an engine never dropped
	return c.New(opts)
}

// New returns a Machine of the compiled spec in its initial state, as
// [New] does, sharing c's tables.
func (c *Compiled[S, E, D]) New(opts Options[S, E, D]) (*Machine[S, E, D], error) {
	return c.NewIn(c.spec.Leaf(c.spec.Initial), opts)
}

// NewIn is New for a machine that starts in state rather than the
// spec's initial one, with no entry callback run for it: for a machine
// that is dropped while it rests in a state and made again when an event
// must leave it (many machines of one spec, most of them at rest). A
// state the spec does not declare is reported as a [*SpecError].
func (c *Compiled[S, E, D]) NewIn(state S, opts Options[S, E, D]) (*Machine[S, E, D], error) {
	if _, ok := c.spec.State(state); !ok {
		return nil, &SpecError{Spec: c.spec.Name, Entry: fmt.Sprintf("NewIn(%q)", state),
			Reason: "is not a declared state"}
	}
	if !c.leaves[state] {
		return nil, &SpecError{Spec: c.spec.Name, Entry: fmt.Sprintf("NewIn(%q)", state),
			Reason: "is a superstate, which a machine is never in; name one of its leaves"}
	}
	for name, cbs := range map[string]map[S]func(context.Context, Step[S, E, D]){"OnEnter": opts.OnEnter, "OnExit": opts.OnExit} {
		for state := range cbs {
			if _, ok := c.spec.State(state); !ok {
				return nil, &SpecError{Spec: c.spec.Name, Entry: fmt.Sprintf("Options.%s[%q]", name, state),
					Reason: "is not a declared state; a callback keyed by it would never run"}
			}
		}
	}
	m := &Machine[S, E, D]{
		c:        c,
		onEnter:  c.byState(opts.OnEnter),
		onExit:   c.byState(opts.OnExit),
		observer: opts.Observer,
		onError:  opts.OnError,
	}
	m.build(state)
	return m, nil
}

// byState copies callbacks keyed by state into a slice in the order of
// spec.States (nil when there are none): a machine's own copy, smaller
// than a map when many machines share one spec.
func (c *Compiled[S, E, D]) byState(cbs map[S]func(context.Context, Step[S, E, D])) []func(context.Context, Step[S, E, D]) {
	var out []func(context.Context, Step[S, E, D])
	for st, f := range cbs {
		if f == nil {
			continue
		}
		if out == nil {
			out = make([]func(context.Context, Step[S, E, D]), len(c.spec.States))
		}
		out[c.index[st]] = f
	}
	return out
}
