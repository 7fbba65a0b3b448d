package conn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn/internal/transport"
	"github.com/mcpfsm/mcpfsm/fsm"
	"github.com/mcpfsm/mcpfsm/policy"
)

// A supervisor's life: Start builds its connection machine, whose entry
// actions are the loop's (loop.go); Close asks the loop to dispose, and
// disposal waits for every generation and worker, bounded by CloseTimeout;
// a Close whose context ends first kills the processes not yet confirmed
// gone.

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
	gate    *callGate // admits tool calls: MaxConcurrentCalls, HoldCalls (callgate.go)

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
	pub       *publisher  // the tools and catalog listing it published (publisher.go)
	retry     *retryTimer // the armed backoff or probe, in the backoff states and exhausted
	readyDone bool
	waiters   []chan<- error     // Reconnect calls waiting for the attempt in flight
	stuck     *generation        // the generation that halted reconnecting, in halted
	stuckGone bool               // its process has exited since
	probing   bool               // the attempt in flight is a probe from exhausted
	credWait  context.CancelFunc // ends the wait for a credential, in needs-authorization
	waiter    CredentialWaiter   // the OAuth handler of the generation refused last, if it can tell when a credential arrives
	// permanentRun counts the consecutive attempts that failed in a way
	// no wait can fix; the second leads to failed-permanent.
	permanentRun int
	resyncLog    logLimiter // coalesces the re-sync log line

	ext     sessionState // the session beyond its tools (session.go)
	classic atomic.Bool  // the server died on the discover probe: use initialize (protocol.go)
	modern  atomic.Bool  // the server refused the classic initialize: use discover (protocol.go)
}

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
		gate:    newCallGate(r.Clock, r.Name, r.MaxConcurrentCalls, r.CallTimeout),
	}
	s.pub = &publisher{server: r.Name, registry: r.Registry, catalog: r.Catalog, setNames: s.setToolNames}
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
					s.pub.unpublish()
					s.armProbe(st.Data)
				},
				FailedPermanent:    func(context.Context, step) { s.pub.unpublish() },
				NeedsAuthorization: func(context.Context, step) { s.awaitCredential() },
				Disposing:          func(context.Context, step) { s.dispose() },
				Disposed:           func(context.Context, step) { s.pub.unpublish() },
			},
			// Leaving a backoff state or exhausted, whichever way, disarms
			// its timer.
			OnExit: map[State]func(context.Context, step){
				FailedRetrying:     func(context.Context, step) { s.disarm() },
				LostReconnecting:   func(context.Context, step) { s.disarm() },
				Exhausted:          func(context.Context, step) { s.disarm() },
				NeedsAuthorization: func(context.Context, step) { s.stopAwait() },
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
// when the server came up); by then State and Status report where the
// outcome led. Later outages do not change it. It returns ctx's error if
// ctx ends first.
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
		return fmt.Errorf("mcp server %q: close: %w", s.cfg.Name, ctx.Err())
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

// dispose is the entry action of disposing: fence, cancel, close, then wait
// for quiescence off the loop. (Leaving a backoff state already disarmed
// its timer.)
func (s *Supervisor) dispose() {
	s.resolveReady(s.closedErr())
	s.answerWaiters(s.closedErr())
	// The generation that halted reconnecting is waited for too: its
	// process may still run, and a Close that returned nil beside it
	// would let a host start the server again (a config reload).
	var barriers []*generation
	for _, g := range []*generation{s.pending, s.current, s.stuck} {
		if g != nil && !slices.Contains(barriers, g) {
			barriers = append(barriers, g)
		}
	}
	s.pending = nil
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
			ok = waitOrExpire(g.released, expired) && ok
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
		ok = waitOrExpire(quiet, expired) && ok
		s.post(func() { s.quiesced(ok) })
	}()
}

// quiesced ends disposal. An incomplete shutdown is logged at error, not
// only returned: a host that ignores Close's error must still learn that
// a server process may have outlived its supervisor.
func (s *Supervisor) quiesced(ok bool) {
	if !ok {
		s.disposeErr = fmt.Errorf("mcp server %q: close: a server process did not exit within %v: %w",
			s.cfg.Name, s.cfg.CloseTimeout, ErrIncompleteShutdown)
		s.cfg.Logger.Error("shutdown may be incomplete: a server process did not exit within CloseTimeout ("+
			s.cfg.CloseTimeout.String()+"); check for a leftover process",
			"server", s.cfg.Name, "state", string(s.machine.State()), "generation", s.genSeq, "err", s.disposeErr)
	}
	if s.release != nil {
		s.release()
	}
	s.fire(EventDisposed, Payload{Err: s.disposeErr})
}

// killWait bounds how long a Close whose context ended waits for the
// processes it killed to be reaped. SIGKILL is sent before Close returns,
// so they die even if the host exits at once.
const killWait = time.Second

// processes is the set of a supervisor's transports that own a process not
// yet confirmed gone. Close kills them all at once when its context ends
// before disposal does (a host's second interrupt, or its own deadline):
// no server process outlives a host that gives up waiting.
type processes struct {
	mu sync.Mutex
	m  map[Terminator]struct{}
}

func (p *processes) add(t Terminator) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[Terminator]struct{}{}
	}
	p.m[t] = struct{}{}
}

func (p *processes) remove(t Terminator) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, t)
}

// killAll kills every process now, skipping the grace periods, and waits
// at most killWait for them to be gone.
func (p *processes) killAll() {
	p.mu.Lock()
	var gone []<-chan struct{}
	for t := range p.m {
		gone = append(gone, killNow(t))
	}
	p.mu.Unlock()
	timer := time.NewTimer(killWait)
	defer timer.Stop()
	for _, c := range gone {
		select {
		case <-c:
		case <-timer.C:
			return
		}
	}
}

// killNow terminates t with no grace period: for the package's own
// transports the process group is SIGKILLed before it returns.
func killNow(t Terminator) <-chan struct{} {
	return terminateWithin(t, time.Nanosecond) // no room for a grace period
}

// terminateWithin terminates t so that it ends within d if it can.
func terminateWithin(t Terminator, d time.Duration) <-chan struct{} {
	if bt, ok := t.(transport.Owned); ok {
		return bt.TerminateWithin(d)
	}
	return t.Terminate()
}

// observe is the machine's observer: it records the transition, logs it
// with a message derived from the target state, and reports it to
// OnTransition. It runs on the loop, so transitions are delivered in order
// and never concurrently.
func (s *Supervisor) observe(st fsm.Step[State, Event, Payload]) {
	p := st.Data
	if p.Generation == 0 {
		// Steps that concern no failed or lost generation (a retry
		// starting, disposal) concern the newest one.
		p.Generation = s.genSeq
	}
	now := s.clk.Now()
	t := Transition{
		Server: s.cfg.Name, From: st.From, To: st.To, Event: st.Event, When: st.When, At: now,
		Attempt: p.Attempt, MaxAttempts: p.MaxAttempts, Delay: p.Delay, Err: p.Err, Generation: p.Generation,
		Protocol: p.Protocol,
	}
	s.mu.Lock()
	s.status.State = st.To
	s.status.Attempt = p.Attempt
	s.status.Since = now
	s.status.Delay, s.status.NextRetry = 0, time.Time{}
	if s.retry != nil {
		s.status.Delay, s.status.NextRetry = t.Delay, now.Add(t.Delay)
	}
	if p.Err != nil {
		s.status.LastErr = p.Err
	}
	if p.Protocol != "" {
		s.status.Protocol = p.Protocol
	}
	s.status.Generation = s.genSeq
	s.mu.Unlock()
	s.logTransition(t)
	s.gate.holds.broadcast()
	if s.cfg.OnTransition != nil {
		s.cfg.OnTransition(t)
	}
	s.watch.deliver(t)
}

// logTransition writes the one log line of a transition, at the target
// state's level, with the message its say function builds from the
// state's phrase; so "connection failed" and "connection lost" follow from
// the state and cannot be mixed up. A failure or loss ends the message
// with its cause ("; cause: ..."), which says what the server did, so an
// operator reading only messages learns why.
func (s *Supervisor) logTransition(t Transition) {
	f := t.To.facts()
	ctx := context.Background()
	if !s.cfg.Logger.Enabled(ctx, f.level) {
		return // nothing below is worth building for a line nobody reads
	}
	msg, extra := f.phrase, []any(nil)
	if f.say != nil {
		msg, extra = f.say(f.phrase, t, s.cfg.CloseTimeout)
	}
	attrs := append([]any{"server", t.Server, "state", string(t.To), "from", string(t.From), "event", string(t.Event),
		"generation", t.Generation}, extra...)
	if t.Protocol != "" {
		attrs = append(attrs, "protocol", t.Protocol)
	}
	if t.Err != nil {
		msg += "; cause: " + causeText(t.Err)
		attrs = append(attrs, "err", t.Err)
	}
	s.cfg.Logger.Log(ctx, f.level, msg, attrs...)
}

// Watch returns a channel that receives every transition of the connection
// machine from now on, in order, each with the same fields OnTransition
// sees, plus Dropped.
//
// Unlike Config.OnTransition, a watcher never holds up the supervisor: the
// channel is buffered ([WatchBuffer] transitions), and when a reader falls
// so far behind that the buffer is full, the oldest unread transition is
// dropped to make room for the newest. The transition received right after
// a gap says how many were lost in it (Transition.Dropped), so a reader
// that cares re-reads [Supervisor.Status] then.
//
// The channel is closed once the supervisor is disposed, after the final
// transition into [Disposed], or when ctx ends; transitions already
// buffered can still be received after it is closed. A Watch made after
// disposal, or with a ctx that has already ended, returns a closed
// channel. A reader may stop reading at any time: an abandoned channel
// holds no goroutine.
//
// To follow a supervisor without missing a change, call Watch first and
// then read Status: a transition between the two is then both in the
// snapshot and on the channel, never in neither.
func (s *Supervisor) Watch(ctx context.Context) <-chan Transition {
	return s.watch.add(ctx)
}

func (s *Supervisor) closedErr() error { return fmt.Errorf("mcp server %q: %w", s.cfg.Name, ErrClosed) }
