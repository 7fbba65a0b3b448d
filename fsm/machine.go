package fsm

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	looplab "github.com/looplab/fsm"
)

// Step is one completed transition.
type Step[S ~string, E ~string] struct {
	From, To S
	Event    E
}

// Options are the callbacks of a [Machine]. The zero value is valid.
//
// All callbacks run in the goroutine that is draining the machine's event
// queue (see [Machine.Fire]), one at a time and never concurrently with each
// other, so they need no locking among themselves. They may call any
// Machine method, including Fire.
type Options[S ~string, E ~string] struct {
	// OnEnter callbacks run after the state changed, in the firing goroutine,
	// before Observer. Keys must be declared states (New rejects unknown keys).
	// ctx is the context passed to the Fire that queued the event.
	OnEnter map[S]func(ctx context.Context, st Step[S, E])
	// Observer sees every completed transition exactly once, in order, after OnEnter.
	Observer func(st Step[S, E])
	// OnError receives errors of events that were queued (fired re-entrantly or
	// while another Fire was draining) and turned out not permitted when their turn came.
	// It also receives the context error of a queued event whose context
	// ended before its turn. If OnError is nil, these errors are logged to
	// slog.Default() instead, so they are never silently dropped.
	OnError func(ev E, err error)
}

// Machine is a typed state machine built by [New] from a validated [Spec].
// Its methods are safe for concurrent use.
type Machine[S ~string, E ~string] struct {
	spec     Spec[S, E]
	engine   *looplab.FSM // holds the current state; has no callbacks, so it never calls back into us
	nodes    []node[S, E] // one per state, sorted by name
	index    map[S]int    // state name -> nodes index
	observer func(Step[S, E])
	onError  func(E, error)

	// cur is the nodes index of the engine's state, kept for the draining
	// goroutine, the only one that reads or writes it (the drain hand-over
	// under mu orders one drainer's writes before the next one's reads).
	// It spares the hot path the engine's lock and any hashing.
	cur int

	// mu guards the run-to-completion queue. It is never held while the
	// engine or a callback runs, which is why Fire cannot deadlock.
	mu       sync.Mutex
	draining bool // some goroutine is inside drain; everyone else enqueues
	queue    []pending[E]
	head     int // queue[head:] are the events still to run
}

// node is one state with its exits sorted by event, so that Available
// needs no sorting and step finds a target by binary search.
type node[S ~string, E ~string] struct {
	name    S
	events  []E   // permitted events, sorted
	targets []int // nodes index reached by events[i]
	onEnter func(context.Context, Step[S, E])
}

// pending is a queued event. own marks the event of the goroutine that is
// draining: its error is returned from Fire rather than sent to OnError.
type pending[E ~string] struct {
	ctx context.Context
	ev  E
	own bool
}

// New validates spec (see [Spec.Validate]) and opts, and returns a Machine in
// spec.Initial. The Machine keeps deep copies of spec and of opts.OnEnter.
// An OnEnter key that is not a declared state is reported as a [*SpecError]
// matching [ErrInvalidSpec]; nil OnEnter entries are ignored.
func New[S ~string, E ~string](spec Spec[S, E], opts Options[S, E]) (*Machine[S, E], error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	spec = spec.clone()
	for state := range opts.OnEnter {
		if _, ok := spec.State(state); !ok {
			return nil, &SpecError{Spec: spec.Name, Entry: fmt.Sprintf("Options.OnEnter[%q]", state),
				Reason: "is not a declared state; a callback keyed by it would never run"}
		}
	}
	m := &Machine[S, E]{
		spec:     spec,
		index:    make(map[S]int, len(spec.States)),
		observer: opts.Observer,
		onError:  opts.OnError,
	}
	for i, st := range spec.sortedStates() {
		m.nodes = append(m.nodes, node[S, E]{name: st.Name, onEnter: opts.OnEnter[st.Name]})
		m.index[st.Name] = i
	}
	for i := range m.nodes {
		n := &m.nodes[i]
		targets := spec.Targets(n.name)
		n.events = slices.Sorted(maps.Keys(targets))
		for _, ev := range n.events {
			n.targets = append(n.targets, m.index[targets[ev]])
		}
	}
	m.cur = m.index[spec.Initial]

	descs := make([]looplab.EventDesc, 0, len(spec.Transitions))
	for _, t := range spec.Transitions {
		src := make([]string, len(t.From))
		for i, f := range t.From {
			src[i] = string(f)
		}
		descs = append(descs, looplab.EventDesc{Name: string(t.Event), Src: src, Dst: string(t.To)})
	}
	// No looplab callbacks, ever: every looplab trap (ignored keys,
	// deadlocking or nesting re-entrant calls, cancelled contexts jamming
	// the machine) lives in its callback machinery.
	m.engine = looplab.NewFSM(string(spec.Initial), descs, nil)
	return m, nil
}

// Fire runs event ev to completion, or queues it.
//
// Events run one at a time, in FIFO order, from a queue. Fire appends ev to
// the queue. If no drain is in progress, the caller drains: it runs ev and
// then every event queued meanwhile (by callbacks or other goroutines), in
// order, and returns ev's own error. If a drain is in progress (a callback
// firing re-entrantly, or another goroutine firing concurrently), Fire
// enqueues ev and returns nil at once; if ev turns out not to be permitted
// when its turn comes, the error goes to [Options.OnError]. Hence Fire never
// deadlocks, even when called from OnEnter, Observer or OnError, and a
// callback that fires an event sees that event run only after the callback
// (and the rest of its own transition) has returned.
//
// Running an event means: if ctx is done, return an error wrapping
// ctx.Err() (and context.Cause(ctx)) without changing state; if ev is not
// permitted in the current state, return an [*EventError]; otherwise change
// state, then call OnEnter for the new state with ctx, then Observer.
// A self-loop (a transition whose To is one of its From) is a real
// transition: OnEnter runs again and Observer sees Step{From: s, To: s}.
//
// If a callback panics, the panic propagates out of the Fire that was
// draining, the state change that preceded the callback stands, and the
// machine stays usable: events still queued at that moment run, in order,
// at the start of the next Fire (their errors then go to OnError).
func (m *Machine[S, E]) Fire(ctx context.Context, ev E) error {
	if ctx.Err() != nil {
		return m.ctxError(ctx, ev)
	}
	m.mu.Lock()
	if m.draining {
		m.queue = append(m.queue, pending[E]{ctx: ctx, ev: ev})
		m.mu.Unlock()
		return nil
	}
	m.draining = true
	backlog := m.head < len(m.queue)
	if backlog {
		// Events left behind by a panicking drain go first: FIFO is kept.
		m.queue = append(m.queue, pending[E]{ctx: ctx, ev: ev, own: true})
	}
	m.mu.Unlock()
	return m.drain(ctx, ev, backlog)
}

// drain runs ev (unless it is already queued, when backlog is set) and then
// the queue until it is empty. Only one goroutine drains at a time; the
// draining flag is handed over under mu, which also orders one drainer's
// callbacks before the next drainer's.
func (m *Machine[S, E]) drain(ctx context.Context, ev E, backlog bool) (err error) {
	done := false
	defer func() {
		if done {
			return
		}
		// A callback panicked. Unjam the machine; leave the rest of the
		// queue for the next Fire, whose caller does not own any of it.
		m.mu.Lock()
		for i := m.head; i < len(m.queue); i++ {
			m.queue[i].own = false
		}
		m.draining = false
		m.mu.Unlock()
	}()

	if !backlog {
		err = m.step(ctx, ev)
	}
	for {
		m.mu.Lock()
		if m.head == len(m.queue) {
			m.queue, m.head = m.queue[:0], 0
			m.draining = false
			m.mu.Unlock()
			done = true
			return err
		}
		p := m.queue[m.head]
		m.queue[m.head] = pending[E]{} // do not pin the caller's ctx
		m.head++
		m.mu.Unlock()

		perr := m.step(p.ctx, p.ev)
		switch {
		case p.own:
			err = perr
		case perr != nil:
			m.report(p.ev, perr)
		}
	}
}

// step runs one event. Only the draining goroutine calls it, so the state
// cannot change between reading from and asking the engine to move.
func (m *Machine[S, E]) step(ctx context.Context, ev E) error {
	if ctx.Err() != nil {
		return m.ctxError(ctx, ev)
	}
	from := &m.nodes[m.cur]
	i, ok := slices.BinarySearch(from.events, ev)
	if !ok {
		// The engine was built from the same validated table and would say
		// the same, only after scanning all of its transitions.
		return m.notPermitted(from, ev)
	}
	// The engine gets a context that is never cancelled: looplab jams
	// forever on a cancelled one (issue #115), and with no looplab callbacks
	// it has no other use for ctx. Our callbacks get the caller's ctx.
	switch err := m.engine.Event(context.Background(), string(ev)); err.(type) {
	case nil:
	case looplab.NoTransitionError:
		// looplab's name for a self-loop; for us it is a transition.
	default:
		return fmt.Errorf("fsm %q: looplab engine rejected event %s in state %s: %w", m.spec.Name, ev, from.name, err)
	}
	m.cur = from.targets[i]
	to := &m.nodes[m.cur]
	st := Step[S, E]{From: from.name, To: to.name, Event: ev}
	if to.onEnter != nil {
		to.onEnter(ctx, st)
	}
	if m.observer != nil {
		m.observer(st)
	}
	return nil
}

func (m *Machine[S, E]) notPermitted(from *node[S, E], ev E) error {
	permitted := make([]string, len(from.events))
	for i, e := range from.events {
		permitted[i] = string(e)
	}
	return &EventError{Machine: m.spec.Name, Event: string(ev), State: string(from.name), Permitted: permitted}
}

func (m *Machine[S, E]) ctxError(ctx context.Context, ev E) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != err {
		return fmt.Errorf("fsm %q: event %s not fired: %w: %w", m.spec.Name, ev, err, cause)
	}
	return fmt.Errorf("fsm %q: event %s not fired: %w", m.spec.Name, ev, err)
}

func (m *Machine[S, E]) report(ev E, err error) {
	if m.onError != nil {
		m.onError(ev, err)
		return
	}
	slog.Default().Warn("fsm: queued event failed",
		slog.String("machine", m.spec.Name), slog.String("event", string(ev)), slog.Any("err", err))
}

// State returns the current state. It is safe from any goroutine and from
// callbacks, and never waits for a running callback: during OnEnter and
// Observer it already reports the new state.
func (m *Machine[S, E]) State() S { return S(m.engine.Current()) }

// Can reports whether ev is permitted in the current state. It is safe from
// any goroutine, including from callbacks, and never deadlocks. From another
// goroutine the answer may be stale by the time it is used: Fire decides.
func (m *Machine[S, E]) Can(ev E) bool { return m.engine.Can(string(ev)) }

// Available returns the events permitted in the current state, sorted.
// The caller owns the returned slice.
func (m *Machine[S, E]) Available() []E {
	return slices.Clone(m.nodes[m.index[m.State()]].events)
}

// Spec returns a deep copy of the Spec the Machine was built from.
func (m *Machine[S, E]) Spec() Spec[S, E] { return m.spec.clone() }
