package conn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/fsm"
	"github.com/mcpfsm/mcpfsm/internal/redact"
	"github.com/mcpfsm/mcpfsm/policy"
)

// Supervisor keeps one MCP server connected and its tools registered. It
// runs the connection machine of [Table]: every state change goes through
// the machine, and the machine's entry callbacks start attempts, arm the
// backoff timer, unregister tools and dispose.
//
// All of a Supervisor's decisions are made one at a time, in order, on its
// event loop, which holds a goroutine only while it has work; the
// generation goroutines only report to it. Its methods are safe for
// concurrent use.
type Supervisor struct {
	cfg     resolved
	clk     clock.Clock
	machine *fsm.Machine[State, Event, Payload]
	budget  *policy.Budget
	release func()    // the server-name reservation, if the registry has one
	limit   callLimit // Config.MaxConcurrentCalls's slots; nil: no limit

	turns     turns         // work for the loop, run there in order (loop.go)
	kicked    atomic.Bool   // a list_changed wake-up is queued
	closing   chan struct{} // closed by Close
	closeOnce sync.Once
	done      chan struct{} // closed when the loop has disposed everything
	ready     chan struct{} // closed when the first attempt has an outcome
	workers   sync.WaitGroup
	procs     processes // transports whose process is not yet confirmed gone

	// Written by the loop before ready/done are closed; read after.
	readyErr   error
	disposeErr error

	mu     sync.Mutex // guards status
	status Status
	watch  watchers // the channels of Watch

	// Loop-owned.
	genSeq    uint64
	pending   *generation // the attempt in flight
	current   *generation // the generation whose tools are registered
	published []published
	retry     *retryTimer // the armed backoff or probe, in the backoff states and exhausted
	readyDone bool
	waiters   []chan<- error // Reconnect calls waiting for the attempt in flight
	stuck     *generation    // the generation that halted reconnecting, in halted
	stuckGone bool           // its process has exited since
	probing   bool           // the attempt in flight is a probe from exhausted
	// permanentRun counts the consecutive attempts that failed in a way
	// no wait can fix; the second leads to failed-permanent.
	permanentRun int
	resyncLog    logLimiter // coalesces the re-sync log line

	ext     sessionState // the session beyond its tools (session.go)
	classic atomic.Bool  // the server died on the discover probe: use initialize (protocol.go)
	holds   holdState    // calls waiting for the next generation (hold.go)
}

type published struct {
	tool       Tool
	unregister func()
}

// retryTimer is an armed backoff or probe: once its timer has fired, the
// loop fires its event (backoff-elapsed or probe) with its payload.
type retryTimer struct {
	timer   *clock.Timer // nil: the delay is under immediateDelay
	event   Event
	payload Payload
}

// compiledTable is Table compiled once: every supervisor's machine shares
// its tables.
var compiledTable = sync.OnceValues(func() (*fsm.Compiled[State, Event, Payload], error) {
	return fsm.Compile(Table())
})

// Start validates cfg and starts supervising the server. Invalid
// configuration fails here with a [*ConfigError] naming the field.
//
// ctx bounds startup only: it is not the supervisor's lifetime, and
// cancelling it later changes nothing (call [Supervisor.Close] to stop).
// Without FailOnStartupError, Start returns at once and the first attempt
// runs in the background; [Supervisor.Ready] reports its outcome. With it,
// Start waits for the first attempt (bounded by ctx) and, if it fails or
// ctx ends first, returns the error and leaves nothing running.
func Start(ctx context.Context, cfg Config) (*Supervisor, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	s := &Supervisor{
		cfg:     r,
		clk:     r.Clock,
		closing: make(chan struct{}),
		done:    make(chan struct{}),
		ready:   make(chan struct{}),
		limit:   newCallLimit(r.MaxConcurrentCalls),
	}
	s.budget = policy.NewBudget(r.policy, r.Clock)
	if res, ok := r.Registry.(ServerReserver); ok {
		if s.release, err = res.Reserve(r.Name); err != nil {
			return nil, err
		}
	}
	type step = fsm.Step[State, Event, Payload]
	table, err := compiledTable()
	if err == nil {
		s.machine, err = table.New(fsm.Options[State, Event, Payload]{
			// The entry actions; each reads what it needs from the payload.
			OnEnter: map[State]func(context.Context, step){
				Connecting: func(_ context.Context, st step) {
					s.probing = st.Event == EventProbe
					s.startAttempt(st.Data.Attempt)
				},
				FailedRetrying:   func(_ context.Context, st step) { s.armTimer(st.Data) },
				LostReconnecting: func(_ context.Context, st step) { s.armTimer(st.Data) },
				Exhausted: func(_ context.Context, st step) {
					s.unpublish()
					s.armProbe(st.Data)
				},
				FailedPermanent: func(context.Context, step) { s.unpublish() },
				Disposing:       func(context.Context, step) { s.dispose() },
				Disposed:        func(context.Context, step) { s.unpublish() },
			},
			// Leaving a backoff state or exhausted, whichever way, disarms
			// its timer.
			OnExit: map[State]func(context.Context, step){
				FailedRetrying:   func(context.Context, step) { s.disarm() },
				LostReconnecting: func(context.Context, step) { s.disarm() },
				Exhausted:        func(context.Context, step) { s.disarm() },
			},
			Observer: s.observe,
			OnError: func(ev Event, err error) {
				s.cfg.Logger.Error("connection machine rejected a queued event; this is a bug in mcpfsm",
					"server", s.cfg.Name, "event", string(ev), "err", err)
			},
		})
	}
	if err != nil {
		if s.release != nil {
			s.release()
		}
		return nil, fmt.Errorf("conn: connection table: %w", err)
	}
	if err := s.startSession(); err != nil {
		if s.release != nil {
			s.release()
		}
		return nil, err
	}
	s.status = Status{Server: r.Name, State: Connecting, MaxAttempts: r.policy.MaxAttempts}
	s.startAttempt(0)
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
// within CloseTimeout. If ctx ends first, Close kills every server process
// group at once (SIGKILL, skipping the grace periods) and returns ctx's
// error; the rest of disposal goes on in the background. Close is
// idempotent and safe for concurrent use.
func (s *Supervisor) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.post(s.closeRequested)
	})
	select {
	case <-s.done:
		return s.disposeErr
	case <-ctx.Done():
		s.procs.killAll()
		return fmt.Errorf("conn: closing %q: %w", s.cfg.Name, ctx.Err())
	}
}

// fire runs one event through the machine with its payload. Only the loop
// fires events.
func (s *Supervisor) fire(ev Event, p Payload) {
	if err := s.machine.FireWith(context.Background(), ev, p); err != nil {
		s.cfg.Logger.Error("connection machine rejected an event; this is a bug in mcpfsm",
			"server", s.cfg.Name, "state", string(s.machine.State()), "event", string(ev), "err", err)
	}
}

// startAttempt is the entry action of connecting: a fresh generation.
func (s *Supervisor) startAttempt(attempt int) {
	g := s.newGeneration(attempt)
	s.pending = g
	s.workers.Add(1)
	go g.run()
}

// attemptDone is the outcome of the pending attempt: its tools, or why it
// failed and whether its process is gone.
func (s *Supervisor) attemptDone(g *generation, tools []Tool, err error, released bool) {
	if g != s.pending {
		return // fenced: disposal retired it
	}
	first := !s.readyDone
	if err == nil {
		if serr := s.swap(g, tools); serr != nil {
			if first && s.cfg.FailOnStartupError {
				// Strict startup registers the tools or fails Start, and
				// the attempt fails only once its session is closed.
				s.workers.Add(1)
				go func() {
					defer s.workers.Done()
					released := g.shutdownAndWait()
					s.post(func() { s.attemptDone(g, nil, serr, released) })
				}()
				return
			}
			// A refused registration is a naming problem that a respawn
			// cannot fix: stay connected with no tools (the previous ones
			// point at a dead generation) and register at the next change.
			s.unpublish()
			s.cfg.Logger.Error("registering tools failed: "+serr.Error()+"; connected with no tools until the server's tool list changes",
				"server", s.cfg.Name, "state", string(s.State()), "generation", g.id, "err", serr)
		}
		s.pending, s.current = nil, g
		s.established(g)
		if s.probing {
			s.budget.Reset() // a probe that succeeds ends the outage
		}
		s.budget.Up()
		s.permanentRun = 0
		s.fire(EventConnected, Payload{Attempt: g.attempt, MaxAttempts: s.cfg.policy.MaxAttempts, Generation: g.id, Protocol: g.protocol})
		s.resolveReady(nil)
		s.answerWaiters(nil)
		// The attempt's listing is done; a change that arrived during it
		// starts the first re-sync now.
		if g.changed.Swap(false) {
			s.syncFire(g, SyncChanged)
		}
		s.syncFire(g, SyncListed)
		return
	}
	s.pending = nil
	// A refused authorization is not an outage: it charges no budget and
	// its own guard stops reconnecting (see AuthError).
	// The cause is redacted once here: it goes to Status, transitions,
	// logs and Reconnect's callers, and the SDK's errors quote the
	// endpoint's URL, query values and all.
	var ferr error = &FailedError{Server: s.cfg.Name, Attempt: g.attempt, Generation: g.id, Err: redact.Error(err)}
	status := g.authRefused()
	if status != 0 {
		ferr = &AuthError{Server: s.cfg.Name, Status: status, Generation: g.id, Err: redact.Error(err)}
	}
	s.resolveReady(ferr)
	// Reconnect's callers hear the outcome once the machine has moved on
	// from connecting, so that State then reports where it led.
	waiters := s.waiters
	s.waiters = nil
	defer answer(waiters, ferr)
	if first && s.cfg.FailOnStartupError {
		// Start is about to Close: dispose now, with the reason recorded.
		s.fire(EventDispose, Payload{Attempt: g.attempt, Err: ferr, Generation: g.id})
		return
	}
	if status != 0 {
		if !released {
			s.stuck = g
		}
		s.fire(EventAttemptFailed, Payload{Attempt: g.attempt, Err: ferr, Generation: g.id,
			Released: released, Enabled: s.cfg.policy.Enabled, Refused: true})
		return
	}
	if errors.Is(err, ErrPermanent) {
		s.permanentRun++
	} else {
		s.permanentRun = 0
	}
	p := s.outcome(g, g.attempt, ferr, released)
	p.Permanent = s.permanentRun >= 2
	s.fire(EventAttemptFailed, p)
}

// lost is the end of an established generation's session; at is when its
// connection was first known bad, where its uptime ends.
func (s *Supervisor) lost(g *generation, err error, at time.Time, released bool) {
	if g != s.current || !s.machine.Can(EventConnectionLost) {
		return // fenced: a retired generation, or disposal closed it
	}
	lerr := &LostError{Server: s.cfg.Name, Generation: g.id, Err: redact.Error(err)}
	s.fire(EventConnectionLost, s.outcomeAt(g, 0, lerr, released, at))
}

// outcome is the payload of a failure or loss of g, from which the
// table's guards choose the next state. The outage budget is charged only
// when the generation was released: one that was not halts reconnecting,
// and is kept so that Reconnect can tell when its process is gone. The
// delay is the backoff, or in exhausted the probe interval, raised to a
// Retry-After the server sent.
func (s *Supervisor) outcome(g *generation, attempt int, err error, released bool) Payload {
	return s.outcomeAt(g, attempt, err, released, s.clk.Now())
}

// outcomeAt is outcome for a connection last known good at t.
func (s *Supervisor) outcomeAt(g *generation, attempt int, err error, released bool, t time.Time) Payload {
	p := Payload{Attempt: attempt, Err: err, Generation: g.id, Released: released, Enabled: s.cfg.policy.Enabled}
	if !released {
		s.stuck = g
		return p
	}
	d := s.budget.DownAt(t)
	p.Attempt, p.MaxAttempts, p.Delay, p.Retry = d.Attempt, d.MaxAttempts, d.Delay, d.Retry
	if !d.Retry && p.Enabled {
		p.Delay = s.cfg.policy.ProbeInterval
	}
	p.Delay = retryAfterFloor(p.Delay, err)
	return p
}

func (s *Supervisor) resolveReady(err error) {
	if s.readyDone {
		return
	}
	s.readyDone = true
	s.readyErr = err
	close(s.ready)
}

// immediateDelay is the shortest backoff that gets a timer. A shorter one
// (policy.Policy accepts down to 1 ns) is below what any platform's timers
// resolve, so the loop starts the next attempt as soon as the backoff state
// is entered.
const immediateDelay = time.Microsecond

// armTimer is the entry action of the backoff states: the loop fires
// backoff-elapsed, with the attempt p grants, once p.Delay has passed (at
// once, with no timer, when p.Delay is under immediateDelay).
func (s *Supervisor) armTimer(p Payload) {
	s.retry = &retryTimer{event: EventBackoffElapsed, payload: p}
	if p.Delay >= immediateDelay {
		s.retry.timer = s.afterDelay(s.retry)
	}
}

// afterDelay starts r's timer: once r's delay has passed, the loop fires
// r's event, unless r was disarmed meanwhile (a timer that fired just
// before its Stop is fenced here).
func (s *Supervisor) afterDelay(r *retryTimer) *clock.Timer {
	// The clock runs f on a goroutine of its own with nothing else to
	// do: it may run the loop itself (postHere).
	return s.clk.AfterFunc(r.payload.Delay, func() {
		s.postHere(func() {
			if s.retry == r {
				p := r.payload
				s.fire(r.event, Payload{Attempt: p.Attempt, MaxAttempts: p.MaxAttempts})
			}
		})
	})
}

// disarm is the exit action of the backoff states.
func (s *Supervisor) disarm() {
	if s.retry != nil {
		if s.retry.timer != nil {
			s.retry.timer.Stop()
		}
		s.retry = nil
	}
}

// isDone reports whether ch is closed; a nil ch is not.
func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
