package fsm

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	looplab "github.com/looplab/fsm"
)

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
