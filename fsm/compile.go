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
	}
	for i, st := range c.spec.States {
		c.index[st.Name] = i
	}
	for _, t := range c.spec.Transitions {
		name := t.Label()
		if !slices.Contains(c.names[t.Event], name) {
			c.names[t.Event] = append(c.names[t.Event], name)
		}
		src := make([]string, len(t.From))
		for i, f := range t.From {
			src[i] = string(f)
			if c.exits[f] == nil {
				c.exits[f] = map[E][]arc[S, D]{}
			}
			c.exits[f][t.Event] = append(c.exits[f][t.Event], arc[S, D]{name: name, to: t.To, guard: t.Guard, when: t.When})
		}
		c.descs = append(c.descs, looplab.EventDesc{Name: name, Src: src, Dst: string(t.To)})
	}
	for state, byEvent := range c.exits {
		c.events[state] = slices.Sorted(maps.Keys(byEvent))
	}
	return c, nil
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
	return c.NewIn(c.spec.Initial, opts)
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
