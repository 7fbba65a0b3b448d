package conn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/fsm"
	"github.com/mcpfsm/mcpfsm/policy"
)

// Supervisor keeps one MCP server connected and its tools registered. It
// runs the connection machine of [Table]: every state change goes through
// the machine, and the machine's entry callbacks start attempts, arm the
// backoff timer, swap tools and close sessions.
//
// All of a Supervisor's decisions are made on one goroutine, its event
// loop; the generation goroutines only report to it. Its methods are safe
// for concurrent use.
type Supervisor struct {
	cfg     resolved
	clk     clock.Clock
	machine *fsm.Machine[State, Event]
	budget  *policy.Budget
	release func() // the server-name reservation, if the registry has one

	inbox     chan any
	kick      chan struct{} // a list_changed flag was set on some generation
	closing   chan struct{} // closed by Close
	closeOnce sync.Once
	done      chan struct{} // closed when the loop has disposed everything
	ready     chan struct{} // closed when the first attempt has an outcome
	workers   sync.WaitGroup

	// Written by the loop before ready/done are closed; read after.
	readyErr   error
	disposeErr error

	mu     sync.Mutex // guards status
	status Status

	// Loop-owned.
	genSeq      uint64
	pending     *generation // the attempt in flight
	current     *generation // the generation whose tools are registered
	published   []published
	timer       *clock.Timer
	timerSeq    uint64
	readyDone   bool
	closingSeen bool           // disposal started: the closing channel is handled
	next        transitionInfo // what the transition being fired carries
}

type published struct {
	tool       Tool
	unregister func()
}

// transitionInfo is the data a transition carries beyond from, to and event.
type transitionInfo struct {
	attempt, maxAttempts int
	delay                time.Duration
	err                  error
	gen                  uint64
}

// Messages to the event loop.
type (
	attemptResult struct {
		g        *generation
		tools    []Tool
		err      error
		released bool
	}
	lostMsg struct {
		g        *generation
		err      error
		released bool
	}
	resyncResult struct {
		g     *generation
		tools []Tool
		err   error
	}
	timerMsg    struct{ seq uint64 }
	quiescedMsg struct{ incomplete bool }
)

// Start validates cfg and starts supervising the server. Invalid
// configuration fails here with a [*ConfigError] naming the field.
//
// Without FailOnStartupError, Start returns at once and the first attempt
// runs in the background; [Supervisor.Ready] reports its outcome. With it,
// Start waits for the first attempt (bounded by ctx) and, if it fails,
// returns its error and leaves nothing running.
func Start(ctx context.Context, cfg Config) (*Supervisor, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	s := &Supervisor{
		cfg:     r,
		clk:     r.Clock,
		inbox:   make(chan any, 16),
		kick:    make(chan struct{}, 1),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
		ready:   make(chan struct{}),
	}
	s.budget = policy.NewBudget(r.policy, r.Clock)
	if res, ok := r.Registry.(ServerReserver); ok {
		if s.release, err = res.Reserve(r.Name); err != nil {
			return nil, err
		}
	}
	s.machine, err = fsm.New(Table(), fsm.Options[State, Event]{
		OnEnter: map[State]func(context.Context, fsm.Step[State, Event]){
			Connecting:       func(context.Context, fsm.Step[State, Event]) { s.startAttempt() },
			FailedRetrying:   func(context.Context, fsm.Step[State, Event]) { s.armTimer() },
			LostReconnecting: func(context.Context, fsm.Step[State, Event]) { s.armTimer() },
			Exhausted:        func(context.Context, fsm.Step[State, Event]) { s.unpublish() },
			Disposing:        func(context.Context, fsm.Step[State, Event]) { s.dispose() },
			Disposed:         func(context.Context, fsm.Step[State, Event]) { s.unpublish() },
		},
		Observer: s.observe,
		OnError: func(ev Event, err error) {
			s.cfg.Logger.Error("connection machine rejected a queued event; this is a bug in mcpfsm",
				"server", s.cfg.Name, "event", string(ev), "err", err)
		},
	})
	if err != nil {
		if s.release != nil {
			s.release()
		}
		return nil, fmt.Errorf("conn: connection table: %w", err)
	}
	s.status = Status{Server: r.Name, State: Connecting, MaxAttempts: r.policy.MaxAttempts}
	s.startAttempt()
	go s.loop()
	if !r.FailOnStartupError {
		return s, nil
	}
	if err := s.Ready(ctx); err != nil {
		cerr := s.Close(context.WithoutCancel(ctx))
		return nil, errors.Join(err, cerr)
	}
	return s, nil
}

// Ready waits for the first attempt's outcome and returns its error (nil
// when the server came up). Later outages do not change it. It returns
// ctx's error if ctx ends first.
func (s *Supervisor) Ready(ctx context.Context) error {
	select {
	case <-s.ready:
		return s.readyErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// State returns the current state of the connection machine.
func (s *Supervisor) State() State { return s.machine.State() }

// Status returns a snapshot of the supervisor's status.
func (s *Supervisor) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status
	st.Tools = append([]string(nil), st.Tools...)
	return st
}

// Done returns a channel closed once the supervisor has disposed of
// everything it started.
func (s *Supervisor) Done() <-chan struct{} { return s.done }

// Close disposes of the supervisor: it cancels any pending retry, closes the
// current session, waits for the in-flight attempt and tool sync, and
// unregisters every tool. When Close returns nil, no goroutine and no
// server process of the supervisor remains. It returns an error wrapping
// [ErrIncompleteShutdown] if a server process could not be confirmed gone
// within CloseTimeout, and ctx's error if ctx ends first (disposal then
// goes on in the background). Close is idempotent and safe for concurrent
// use.
func (s *Supervisor) Close(ctx context.Context) error {
	s.closeOnce.Do(func() { close(s.closing) })
	select {
	case <-s.done:
		return s.disposeErr
	case <-ctx.Done():
		return fmt.Errorf("conn: closing %q: %w", s.cfg.Name, ctx.Err())
	}
}

func (s *Supervisor) send(m any) {
	select {
	case s.inbox <- m:
	case <-s.done:
	}
}

// loop is the supervisor's event loop. It owns every loop-owned field.
func (s *Supervisor) loop() {
	defer close(s.done)
	for s.machine.State() != Disposed {
		var closing chan struct{}
		if !s.closingSeen {
			closing = s.closing
		}
		select {
		case m := <-s.inbox:
			s.handle(m)
		case <-s.kick:
			s.listChanged()
		case <-closing:
			s.closingSeen = true
			s.fire(EventDispose, transitionInfo{})
		}
	}
}

func (s *Supervisor) handle(m any) {
	switch m := m.(type) {
	case attemptResult:
		s.attemptDone(m)
	case lostMsg:
		s.lost(m)
	case resyncResult:
		s.resyncDone(m)
	case timerMsg:
		st := s.machine.State()
		if m.seq == s.timerSeq && (st == FailedRetrying || st == LostReconnecting) {
			s.fire(EventBackoffElapsed, transitionInfo{attempt: s.next.attempt, maxAttempts: s.next.maxAttempts})
		}
	case quiescedMsg:
		if m.incomplete {
			s.disposeErr = fmt.Errorf("conn: closing %q: a server process did not exit within %v: %w",
				s.cfg.Name, s.cfg.CloseTimeout, ErrIncompleteShutdown)
		}
		if s.release != nil {
			s.release()
		}
		s.fire(EventDisposed, transitionInfo{err: s.disposeErr})
	}
}

// fire runs one event through the machine with the data its transition
// record carries. Only the loop fires events.
func (s *Supervisor) fire(ev Event, info transitionInfo) {
	s.next = info
	if err := s.machine.Fire(context.Background(), ev); err != nil {
		s.cfg.Logger.Error("connection machine rejected an event; this is a bug in mcpfsm",
			"server", s.cfg.Name, "state", string(s.machine.State()), "event", string(ev), "err", err)
	}
}

// startAttempt is the entry action of connecting: a fresh generation.
func (s *Supervisor) startAttempt() {
	g := s.newGeneration(s.next.attempt)
	s.pending = g
	s.workers.Add(1)
	go g.run()
}

func (s *Supervisor) attemptDone(m attemptResult) {
	g := m.g
	if g != s.pending {
		return // fenced: disposal retired it
	}
	if m.err == nil {
		if err := s.swap(g, m.tools); err != nil {
			// Phase two failed: the registry refused a tool. The attempt
			// fails, but only after its session is closed.
			s.workers.Add(1)
			go func() {
				defer s.workers.Done()
				s.send(attemptResult{g: g, err: err, released: g.shutdownAndWait()})
			}()
			return
		}
		s.pending, s.current = nil, g
		s.budget.Up()
		s.fire(EventConnected, transitionInfo{attempt: g.attempt, maxAttempts: s.cfg.policy.MaxAttempts, gen: g.id})
		s.resolveReady(nil)
		if g.changed.Swap(false) || g.dirty {
			s.resync(g)
		}
		return
	}
	s.pending = nil
	ferr := &FailedError{Server: s.cfg.Name, Attempt: g.attempt, Generation: g.id, Err: m.err}
	s.cfg.Logger.Warn("connection attempt failed: "+m.err.Error(),
		"server", s.cfg.Name, "state", string(s.machine.State()), "attempt", g.attempt, "generation", g.id, "err", m.err)
	first := !s.readyDone
	s.resolveReady(ferr)
	switch {
	case first && s.cfg.FailOnStartupError:
		// Start is about to Close: dispose now, with the reason recorded.
		s.closeOnce.Do(func() { close(s.closing) })
		s.closingSeen = true
		s.fire(EventDispose, transitionInfo{attempt: g.attempt, err: ferr, gen: g.id})
	case !m.released:
		s.fire(EventCloseTimeout, transitionInfo{attempt: g.attempt, err: ferr, gen: g.id})
	case !s.cfg.policy.Enabled:
		s.fire(EventAttemptFailedNoRetry, transitionInfo{attempt: g.attempt, err: ferr, gen: g.id})
	default:
		s.down(EventAttemptFailed, ferr, g.id)
	}
}

func (s *Supervisor) lost(m lostMsg) {
	g := m.g
	if g != s.current || s.machine.State() != Established {
		return // fenced: a retired generation, or disposal closed it
	}
	lerr := &LostError{Server: s.cfg.Name, Generation: g.id, Err: m.err}
	switch {
	case !m.released:
		s.fire(EventCloseTimeout, transitionInfo{err: lerr, gen: g.id})
	case !s.cfg.policy.Enabled:
		s.fire(EventConnectionLostNoRetry, transitionInfo{err: lerr, gen: g.id})
	default:
		s.down(EventConnectionLost, lerr, g.id)
	}
}

// down consults the outage budget after a failure or loss.
func (s *Supervisor) down(ev Event, err error, gen uint64) {
	d := s.budget.Down()
	info := transitionInfo{attempt: d.Attempt, maxAttempts: d.MaxAttempts, delay: d.Delay, err: err, gen: gen}
	if d.Exhausted() {
		s.fire(EventBudgetExhausted, info)
		return
	}
	s.fire(ev, info)
}

func (s *Supervisor) resolveReady(err error) {
	if s.readyDone {
		return
	}
	s.readyDone = true
	s.readyErr = err
	close(s.ready)
}

// armTimer is the entry action of the backoff states.
func (s *Supervisor) armTimer() {
	s.timerSeq++
	seq := s.timerSeq
	s.timer = s.clk.AfterFunc(s.next.delay, func() { s.send(timerMsg{seq: seq}) })
}

// dispose is the entry action of disposing: fence, cancel, close, then wait
// for quiescence off the loop.
func (s *Supervisor) dispose() {
	if s.timer != nil {
		s.timer.Stop()
	}
	s.resolveReady(fmt.Errorf("conn: %q: %w", s.cfg.Name, ErrClosed))
	gens := []*generation{s.pending, s.current}
	s.pending = nil
	var barriers []*generation
	for _, g := range gens {
		if g != nil {
			barriers = append(barriers, g)
		}
	}
	// One deadline bounds all of disposal, armed before the disposing
	// transition is reported, so a test on a fake clock that sees it can
	// advance past it.
	expired := make(chan struct{})
	deadline := s.clk.AfterFunc(s.cfg.CloseTimeout, func() { close(expired) })
	for _, g := range barriers {
		g.shutdown()
	}
	go func() {
		defer deadline.Stop()
		ok := true
		for _, g := range barriers {
			select {
			case <-g.released:
			case <-expired:
				select {
				case <-g.released: // both were ready: released wins
				default:
					ok = false
				}
			}
		}
		// Every worker is bounded once its generation is shut down, unless a
		// transport ignores cancellation (an HTTP session whose Close never
		// returns, say). Such a worker is left behind and reported at the
		// deadline rather than holding Close for ever.
		quiet := make(chan struct{})
		go func() {
			s.workers.Wait()
			close(quiet)
		}()
		select {
		case <-quiet:
		case <-expired:
			select {
			case <-quiet:
			default:
				ok = false
			}
		}
		s.send(quiescedMsg{incomplete: !ok})
	}()
}
