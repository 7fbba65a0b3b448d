package fsm

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	looplab "github.com/looplab/fsm"
)

// Step is one completed transition, with the data its event was fired
// with.
type Step[S ~string, E ~string, D any] struct {
	From, To S
	Event    E
	// When is the condition of the guard that chose the transition, or
	// empty for an unguarded one.
	When string
	// Data is what the event was fired with ([Machine.FireWith]); the zero
	// D for [Machine.Fire].
	Data D
}

// Options are the callbacks of a [Machine]. The zero value is valid.
//
// All callbacks run in the goroutine that is draining the machine's event
// queue (see [Machine.Fire]), one at a time and never concurrently with each
// other, so they need no locking among themselves. They may call any
// Machine method, including Fire.
type Options[S ~string, E ~string, D any] struct {
	// OnExit callbacks run before the state changes: the guard has chosen
	// the transition, and State still reports the state being left. Keys
	// must be declared states (New rejects unknown keys); a superstate's
	// runs when a transition leaves it, after those of the states inside
	// it. If one panics, the transition does not happen (the exits that
	// ran before it have run).
	OnExit map[S]func(ctx context.Context, st Step[S, E, D])
	// OnEnter callbacks run after the state changed, before Observer.
	// Keys must be declared states (New rejects unknown keys); a
	// superstate's runs when a transition enters it, before those of the
	// states inside it. A transition leaves and enters only the states
	// below the innermost superstate holding both its ends, and a
	// self-transition the leaf alone.
	OnEnter map[S]func(ctx context.Context, st Step[S, E, D])
	// Observer sees every completed transition exactly once, in order, after OnEnter.
	Observer func(st Step[S, E, D])
	// OnError receives errors of events that were queued (fired re-entrantly or
	// while another Fire was draining) and turned out not permitted when their turn came.
	// It also receives the context error of a queued event whose context
	// ended before its turn. If OnError is nil, these errors are logged to
	// slog.Default() instead, so they are never silently dropped.
	OnError func(ev E, err error)
}

// Machine is a typed state machine built by [New] from a validated [Spec].
// Its methods are safe for concurrent use.
//
// The looplab/fsm engine holds the current state, answers Can and runs the
// OnEnter callbacks and the Observer from its enter_state callback; a
// machine put at rest with [Machine.Rest] keeps only its state's name until
// its next event builds the engine again. The
// Machine adds what looplab lacks: typed names, guards that choose among
// the transitions of one event, data carried into every callback, exit
// callbacks that cannot jam the engine, real self-loops, and a
// run-to-completion queue that makes re-entrant firing safe.
type Machine[S ~string, E ~string, D any] struct {
	c *Compiled[S, E, D] // shared with every machine of the same Compile; read-only
	// engine is nil while the machine is at rest (see Rest), when rest
	// holds its state. Only the draining goroutine and Rest (under mu,
	// when nothing drains) store it; State and Can load it from anywhere.
	engine   atomic.Pointer[lease[S, E, D]]
	rest     atomic.Pointer[S]
	onEnter  []func(context.Context, Step[S, E, D]) // by state index; nil: none
	onExit   []func(context.Context, Step[S, E, D])
	observer func(Step[S, E, D])
	onError  func(E, error)

	// inflight is the step the engine is taking, for its enter_state
	// callback. Only the draining goroutine uses it (the drain hand-over
	// under mu orders one drainer's use before the next one's), and a
	// re-entrant Fire is queued, so steps never nest.
	inflight firing[S, E, D]

	// mu guards the run-to-completion queue. It is never held while the
	// engine or a callback runs, which is why Fire cannot deadlock.
	mu       sync.Mutex
	draining bool // some goroutine is inside drain; everyone else enqueues
	queue    []pending[E, D]
	head     int // queue[head:] are the events still to run
}

// engine is a looplab engine and the machine whose steps it takes. An
// engine passes from machine to machine of one Compiled: a machine that
// rests hands it back (see Compiled.putSpare), and the next machine that
// needs one takes it and sets its state, which costs far less than
// building one (looplab copies the whole table into maps of its own).
type engine[S ~string, E ~string, D any] struct {
	fsm *looplab.FSM
	// m is the machine the enter_state callback serves: written when a
	// machine takes the engine, read by that machine's draining
	// goroutine.
	m *Machine[S, E, D]
}

// leaseRead, when set (by a test), runs in withEngine between loading the
// lease and reading its engine.
var leaseRead func()

// lease is one machine's hold on an engine, from the build to the rest.
// Each build makes a new one, so that State and Can, which read the engine
// from any goroutine, can tell that it was still the machine's while they
// read it: its lease is still the machine's (it is never installed again
// once given up).
type lease[S ~string, E ~string, D any] struct{ e *engine[S, E, D] }

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

// pending is a queued event. own marks the event of the goroutine that is
// draining: its error is returned from Fire rather than sent to OnError.
type pending[E ~string, D any] struct {
	ctx  context.Context
	ev   E
	data D
	own  bool
}

// firing is a step being taken, with the caller's context.
type firing[S ~string, E ~string, D any] struct {
	ctx   context.Context
	step  Step[S, E, D]
	enter []int // the states whose OnEnter runs, outermost first
}

// Fire runs event ev, with the zero data, to completion, or queues it; see
// [Machine.FireWith].
func (m *Machine[S, E, D]) Fire(ctx context.Context, ev E) error {
	var zero D
	return m.FireWith(ctx, ev, zero)
}

// FireWith runs event ev with data to completion, or queues it.
//
// Events run one at a time, in FIFO order, from a queue. FireWith appends
// ev to the queue. If no drain is in progress, the caller drains: it runs
// ev and then every event queued meanwhile (by callbacks or other
// goroutines), in order, and returns ev's own error. If a drain is in
// progress (a callback firing re-entrantly, or another goroutine firing
// concurrently), FireWith enqueues ev and returns nil at once; if ev turns
// out not to be permitted when its turn comes, the error goes to
// [Options.OnError]. Hence FireWith never deadlocks, even when called from
// a callback, and a callback that fires an event sees that event run only
// after the callback (and the rest of its own transition) has returned.
//
// Running an event means: if ctx is done, return an error wrapping
// ctx.Err() (and context.Cause(ctx)) without changing state; choose the
// first transition of (current state, ev) whose guard accepts data, or
// return an [*EventError] if there is none; call OnExit of the current
// state (and of the superstates it leaves, innermost first); change
// state; call OnEnter of the new state (after those of the superstates it
// enters, outermost first); call Observer. Every
// callback gets ctx and a [Step] carrying data. A self-loop (a transition
// whose To is one of its From) is a real transition: OnExit and OnEnter
// run again and Observer sees Step{From: s, To: s}.
//
// If a callback panics, the panic propagates out of the call that was
// draining (a panic in OnExit or a guard leaves the state unchanged; one
// in OnEnter or Observer leaves the new state), and the machine stays
// usable: events still queued at that moment run, in order, at the start
// of the next Fire (their errors then go to OnError).
func (m *Machine[S, E, D]) FireWith(ctx context.Context, ev E, data D) error {
	if ctx.Err() != nil {
		return m.ctxError(ctx, ev)
	}
	m.mu.Lock()
	if m.draining {
		m.queue = append(m.queue, pending[E, D]{ctx: ctx, ev: ev, data: data})
		m.mu.Unlock()
		return nil
	}
	m.draining = true
	backlog := m.head < len(m.queue)
	if backlog {
		// Events left behind by a panicking drain go first: FIFO is kept.
		m.queue = append(m.queue, pending[E, D]{ctx: ctx, ev: ev, data: data, own: true})
	}
	m.mu.Unlock()
	return m.drain(pending[E, D]{ctx: ctx, ev: ev, data: data}, backlog)
}

// drain runs p (unless it is already queued, when backlog is set) and then
// the queue until it is empty. Only one goroutine drains at a time; the
// draining flag is handed over under mu, which also orders one drainer's
// callbacks before the next drainer's.
func (m *Machine[S, E, D]) drain(p pending[E, D], backlog bool) (err error) {
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
		err = m.step(p)
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
		m.queue[m.head] = pending[E, D]{} // do not pin the caller's ctx and data
		m.head++
		m.mu.Unlock()

		perr := m.step(p)
		switch {
		case p.own:
			err = perr
		case perr != nil:
			m.report(p.ev, perr)
		}
	}
}

// step runs one event. Only the draining goroutine calls it, so the state
// cannot change between choosing the transition and asking the engine to
// take it.
func (m *Machine[S, E, D]) step(p pending[E, D]) error {
	if p.ctx.Err() != nil {
		return m.ctxError(p.ctx, p.ev)
	}
	l := m.engine.Load()
	if l == nil {
		l = m.build(*m.rest.Load())
	}
	engine := l.e.fsm
	from := S(engine.Current())
	arcs := m.c.exits[from][p.ev]
	i := slices.IndexFunc(arcs, func(a arc[S, D]) bool { return a.guard == nil || a.guard(p.data) })
	if i < 0 {
		return m.notPermitted(from, p.ev, arcs)
	}
	a := arcs[i]
	m.inflight = firing[S, E, D]{ctx: p.ctx, step: Step[S, E, D]{From: from, To: a.to, Event: p.ev, When: a.when, Data: p.data}, enter: a.enter}
	f := &m.inflight
	defer func() { m.inflight = firing[S, E, D]{} }() // do not pin the caller's ctx and data
	// Exit callbacks run here, not in looplab's leave_state: looplab runs
	// that under its event lock (Can would block) and a panic there leaves
	// it "in transition" for ever.
	if m.onExit != nil {
		for _, i := range a.exit {
			if exit := m.onExit[i]; exit != nil {
				exit(p.ctx, f.step)
			}
		}
	}
	// Background: looplab jams for ever on a context cancelled during
	// Event (issue #115); callbacks get the caller's ctx through inflight.
	switch err := engine.Event(context.Background(), a.name); err.(type) {
	case nil:
	case looplab.NoTransitionError:
		// looplab runs no enter_state for a self-loop; for us it is a transition.
		m.entered(f)
	default:
		return fmt.Errorf("fsm %q: looplab engine rejected event %s in state %s: %w", m.c.spec.Name, a.name, from, err)
	}
	return nil
}

// entered runs the callbacks of a completed state change.
func (m *Machine[S, E, D]) entered(f *firing[S, E, D]) {
	if m.onEnter != nil {
		for _, i := range f.enter {
			if enter := m.onEnter[i]; enter != nil {
				enter(f.ctx, f.step)
			}
		}
	}
	if m.observer != nil {
		m.observer(f.step)
	}
}

func (m *Machine[S, E, D]) notPermitted(from S, ev E, arcs []arc[S, D]) error {
	e := &EventError{Machine: m.c.spec.Name, Event: string(ev), State: string(from)}
	for _, p := range m.c.events[from] {
		e.Permitted = append(e.Permitted, string(p))
	}
	for _, a := range arcs {
		e.Guards = append(e.Guards, a.when)
	}
	return e
}

func (m *Machine[S, E, D]) ctxError(ctx context.Context, ev E) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != err {
		return fmt.Errorf("fsm %q: event %s not fired: %w: %w", m.c.spec.Name, ev, err, cause)
	}
	return fmt.Errorf("fsm %q: event %s not fired: %w", m.c.spec.Name, ev, err)
}

func (m *Machine[S, E, D]) report(ev E, err error) {
	if m.onError != nil {
		m.onError(ev, err)
		return
	}
	slog.Default().Warn("fsm: queued event failed",
		slog.String("machine", m.c.spec.Name), slog.String("event", string(ev)), slog.Any("err", err))
}

// State returns the current state. It is safe from any goroutine and from
// callbacks, and never waits for a running callback: during OnExit it
// still reports the state being left, during OnEnter and Observer already
// the new state.
func (m *Machine[S, E, D]) State() S {
	var st S
	if m.withEngine(func(e *looplab.FSM) { st = S(e.Current()) }) {
		return st
	}
	return *m.rest.Load()
}

// withEngine runs f on the machine's engine and reports true, running it
// again if the machine rested meanwhile (its engine may serve another
// machine by then), until the machine held the engine throughout; it
// reports false, without running f, for a machine at rest.
func (m *Machine[S, E, D]) withEngine(f func(*looplab.FSM)) bool {
	for {
		l := m.engine.Load()
		if l == nil {
			return false
		}
		if leaseRead != nil {
			leaseRead()
		}
		f(l.e.fsm)
		if m.engine.Load() == l {
			return true
		}
	}
}

// Can reports whether some transition for ev leaves the current state. It
// does not consult guards, which need the event's data. It is safe from
// any goroutine, including from callbacks, and never deadlocks. From
// another goroutine the answer may be stale by the time it is used: Fire
// decides.
func (m *Machine[S, E, D]) Can(ev E) bool {
	var can bool
	if m.withEngine(func(e *looplab.FSM) { can = slices.ContainsFunc(m.c.names[ev], e.Can) }) {
		return can
	}
	// At rest nothing is in transition: the table answers.
	_, ok := m.c.exits[*m.rest.Load()][ev]
	return ok
}

// Rest puts the machine at rest until its next event: it gives up the
// engine, which holds a copy of the whole transition table (about 4 KiB
// for a table of 30 transitions), and keeps only the current state. The
// engine goes back to the machine's [Compiled], which keeps a few for the
// builds of its machines (a machine made by [New] has a Compiled of its
// own, which keeps none: its engine is dropped). The next Fire takes one
// of those, or builds one, in that state, before it runs; State and Can
// answer from the compiled tables meanwhile. For many machines of one Compiled that
// mostly sit in one state (one per connection, say), call Rest when an
// owner's burst of events is over: the machines at rest then hold a few
// engines in all instead of one each, and a burst seldom has to build one.
//
// Rest does nothing while an event runs (from a callback, or while
// another goroutine drains); it is safe from any goroutine.
func (m *Machine[S, E, D]) Rest() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.draining {
		return
	}
	if l := m.engine.Load(); l != nil {
		st := S(l.e.fsm.Current())
		m.rest.Store(&st)
		m.engine.Store(nil)
		l.e.m = nil
		m.c.putSpare(l.e)
	}
}

// Resting reports whether the machine is at rest (see Rest): its engine
// dropped until the next event.
func (m *Machine[S, E, D]) Resting() bool { return m.engine.Load() == nil }

// build makes the engine in state and installs it. Only the draining
// goroutine, or the constructor, calls it.
func (m *Machine[S, E, D]) build(state S) *lease[S, E, D] {
	e := m.c.takeSpare()
	if e != nil {
		e.fsm.SetState(string(state))
	} else {
		e = &engine[S, E, D]{}
		// The engine's enter_state callback is the one looplab callback
		// used: it runs after the engine changed state and released its
		// event lock, so a callback may call Can or State, and a panic
		// leaves no lock held.
		e.fsm = looplab.NewFSM(string(state), m.c.descs, looplab.Callbacks{
			"enter_state": func(context.Context, *looplab.Event) { e.m.entered(&e.m.inflight) },
		})
	}
	e.m = m
	l := &lease[S, E, D]{e: e}
	m.engine.Store(l)
	return l
}

// Available returns the events permitted in the current state, sorted.
// The caller owns the returned slice.
func (m *Machine[S, E, D]) Available() []E {
	return slices.Clone(m.c.events[m.State()])
}

// Spec returns a deep copy of the Spec the Machine was built from.
func (m *Machine[S, E, D]) Spec() Spec[S, E, D] { return m.c.spec.clone() }

// In reports whether the current state is s or lies inside superstate s.
// It is safe from any goroutine, with the caveats of [Machine.State].
func (m *Machine[S, E, D]) In(s S) bool {
	i, ok := m.c.index[s]
	return ok && slices.Contains(m.c.chains[m.State()], i)
}
