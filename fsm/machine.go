package fsm

import (
	"context"
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
