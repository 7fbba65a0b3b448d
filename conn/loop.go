package conn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn/internal/transport"
	"github.com/mcpfsm/mcpfsm/fsm"
	"github.com/mcpfsm/mcpfsm/internal/redact"
)

// Every decision of a supervisor is made here, and a generation's outcome
// reads here whole: the generation machine's transitions (generation.fire),
// whose reports go onto the loop's queue (turns, post); the turns that act
// on them, an attempt's outcome (attemptDone), a loss (lost), a re-sync
// (resyncDone); the tool swap they publish (swap); and the timers of what
// comes next (armTimer, armProbe). What a generation is and how it
// connects is in generation.go; what its session is asked, in session.go.
//
// The supervisor's event loop runs on a goroutine only while it has work:
// post queues a turn and starts the goroutine if none runs, and the
// goroutine ends once the queue is empty. An idle supervisor (established,
// or waiting out a backoff) therefore holds no goroutine at all; its timers
// and its generations post when something happens. Turns run one at a
// time, in the order they were posted, so every loop-owned field is still
// touched by one goroutine at a time.

// turns is the loop's queue of work.
type turns struct {
	mu       sync.Mutex
	queue    []func()
	running  bool // a goroutine is running the loop
	finished bool // the machine reached its terminal state: posts are dropped
}

// post hands f to the loop, which runs it in order with everything else
// it does. It reports false, and drops f, once the loop has finished.
func (s *Supervisor) post(f func()) bool {
	start, ok := s.turns.add(f)
	s.startLoop(start, false)
	return ok
}

// startLoop starts the loop when a post found it idle (start). With own,
// the caller is a goroutine of the supervisor's own that has nothing left
// to do that cannot wait (a generation's goroutine with the attempt's
// outcome, the goroutine that reaped a server: see genPayload.own), and
// runs the loop itself, at once. That saves the start of a
// goroutine, and on an idle machine the wake-up of another processor,
// on the way from the event to the loop. Never from a caller's goroutine
// or the SDK's: the loop may run there for a while, and a host's callback
// on the loop (OnTransition, its Logger) that waits for something the SDK
// must first do (retire a call at a session's end) would wait until the
// call's CallTimeout.
func (s *Supervisor) startLoop(start, own bool) {
	switch {
	case !start:
	case own:
		s.loop()
	default:
		go s.loop()
	}
}

// postHere is post from a goroutine of the supervisor's own (see
// startLoop).
func (s *Supervisor) postHere(f func()) bool {
	start, ok := s.turns.add(f)
	s.startLoop(start, true)
	return ok
}

// add queues f and reports whether the caller must start the loop, or
// false, false once the loop has finished.
func (t *turns) add(f func()) (start, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.finished {
		return false, false
	}
	t.queue = append(t.queue, f)
	start = !t.running
	t.running = true
	return start, true
}

// next takes the next turn, or reports false (and marks the loop stopped)
// when there is none.
func (t *turns) next() (func(), bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.queue) == 0 {
		t.running = false
		t.queue = nil // an idle supervisor keeps no buffer
		return nil, false
	}
	f := t.queue[0]
	t.queue[0] = nil
	t.queue = t.queue[1:]
	return f, true
}

// finish drops every later post.
func (t *turns) finish() {
	t.mu.Lock()
	t.finished, t.running, t.queue = true, false, nil
	t.mu.Unlock()
}

// loop runs the queued turns until there are none, or until the machine
// reaches its terminal state, which closes done.
func (s *Supervisor) loop() {
	for {
		f, ok := s.turns.next()
		if !ok {
			// Idle: the machine keeps only its state until the next
			// event (about 4 KiB less per supervisor at rest), unless an
			// attempt is in flight, whose outcome comes within moments
			// and would only build the engine again.
			if s.machine.State() != Connecting {
				s.machine.Rest()
			}
			return
		}
		f()
		s.afterTurn()
		if s.machine.State().Terminal() {
			s.turns.finish()
			close(s.done)
			return
		}
	}
}

// afterTurn is what the loop checks after every turn: a backoff too short
// for a timer starts the next attempt at once, without a timer or a trip
// through the queue; and the process that halted reconnecting may have
// exited since.
func (s *Supervisor) afterTurn() {
	for r := s.retry; r != nil && r.timer == nil && !isDone(s.closing); r = s.retry {
		s.fire(r.event, Payload{Attempt: r.payload.Attempt, MaxAttempts: r.payload.MaxAttempts})
	}
	if s.stuck != nil && !s.stuckGone && isDone(s.stuck.released) {
		s.stuckReleased()
	}
}

// kick wakes the loop for a list_changed flag set on some generation; a
// wake-up already queued carries the news.
func (s *Supervisor) kick() {
	if s.kicked.CompareAndSwap(false, true) {
		s.post(func() {
			s.kicked.Store(false)
			s.listChanged()
		})
	}
}

// closeRequested is the turn Close posts: dispose, unless disposal is
// already under way.
func (s *Supervisor) closeRequested() {
	if s.machine.Can(EventDispose) {
		s.fire(EventDispose, Payload{})
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

// genCause is why a generation was closed, which decides what its
// release reports to the loop.
type genCause uint8

const (
	causeRetired genCause = iota // the supervisor retired it: nothing to report
	causeFailed                  // its attempt failed: report the failure
	causeLost                    // its connection went bad: report the loss
)

// genPayload is what an event of the generation machine carries.
type genPayload struct {
	tools   []Tool    // connected: the attempt's tools
	err     error     // went-bad, close: why
	at      time.Time // went-bad: when the connection was first known bad
	natural bool      // went-bad: the session ended by itself (the SDK retired its calls)
	cause   genCause  // close
	// own: the firing goroutine is the supervisor's own, with nothing
	// left to do that cannot wait (the attempt's, the one that reaped
	// the process), so the report may run the loop on it (startLoop).
	own bool
}

// genLife is a generation's machine: its state and what its transitions
// recorded. The state is written under the generation's mu, and also
// kept in an atomic so that the call path reads it without the lock.
type genLife struct {
	state   atomic.Pointer[genState]
	cause   genCause
	badAt   time.Time  // when the connection was first known bad
	downAt  time.Time  // when the generation left connecting or up (the clock's time then)
	badErr  error      // why; written once, before the state becomes bad
	natural bool       // the session ended by itself
	closed  genPayload // the close event, for the report of the release
	term    Terminator
	// An end the transport reported while the attempt ran, which the
	// machine defers until the attempt's outcome (run replays it once up).
	early, earlyExited bool
}

// lifeState returns the generation's state.
func (g *generation) lifeState() genState {
	if p := g.life.state.Load(); p != nil {
		return *p
	}
	return genConnecting
}

// down reports whether the generation is past its useful life: calls
// fail fast.
func (g *generation) down() bool {
	switch g.lifeState() {
	case genConnecting, genUp:
		return false
	}
	return true
}

// closingLocked reports, under g.mu, whether shutdown started: nothing new may
// be attached.
func (g *generation) closingLocked() bool {
	switch g.lifeState() {
	case genClosing, genExpired, genReleased:
		return true
	}
	return false
}

// badCause returns why the connection is bad, or nil if it is not known
// to be.
func (g *generation) badCause() error {
	if g.lifeState() == genConnecting || g.lifeState() == genUp {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.life.badErr
}

// fire runs one event through g's machine and reports whether the table
// permits it in g's state; an event it does not permit changes nothing,
// so that the first bad news, the first close and the first of release
// and expiry win. Under g.mu it moves the state, records the event's data,
// does what must precede the report (close the channels the supervisor
// reads, arm timers) and queues the transition's report on the loop; then,
// unlocked, it runs the new state's entry action, and runs the loop if the
// report started it.
func (g *generation) fire(ev genEvent, d genPayload) bool {
	s := g.sup
	g.mu.Lock()
	from := g.lifeState()
	to, ok := genMoves[from][ev]
	if !ok {
		g.mu.Unlock()
		return false
	}
	g.life.state.Store(genStates[to])
	if (from == genConnecting || from == genUp) && to != genUp {
		g.life.downAt = s.clk.Now()
	}
	var report func()
	term := g.life.term
	switch to {
	case genUp:
		tools := d.tools
		// Armed before the loop hears "up", so that whoever sees the
		// established transition (a test advancing a fake clock) knows
		// the first ping is already scheduled.
		g.startKeepAliveLocked()
		report = func() { s.attemptDone(g, tools, nil, true) }
	case genBad:
		g.life.badAt, g.life.badErr, g.life.natural = d.at, d.err, d.natural
		g.stopKeepAliveLocked()
	case genClosing:
		g.stopKeepAliveLocked() // a retired generation too: no timer keeps it in memory
		if g.resyncTimer != nil {
			g.resyncTimer.Stop()
		}
		g.life.cause, g.life.closed = d.cause, d
		if d.cause == causeLost {
			g.life.closed.err, g.life.closed.at = g.life.badErr, g.life.badAt
		}
		// One barrier deadline per generation, armed before anything is
		// closed: every waiter shares it, and a test that sees the
		// close begin can advance a fake clock past it.
		g.expiry = s.clk.AfterFunc(s.cfg.CloseTimeout, func() { g.fire(genExpire, genPayload{own: true}) }) // the clock's own goroutine
		// The session's close (shutdownWork) is a worker, counted here so
		// that whoever sees closing (disposal) sees it counted.
		s.workers.Add(1)
	case genExpired:
		close(g.expired)
		report = g.releaseReport(false)
	case genReleased:
		close(g.released)
		if from == genExpired {
			// Released after the barrier gave up: the loop, which may
			// have halted on it, is woken to see (afterTurn).
			report = func() {}
		} else {
			report = g.releaseReport(true)
		}
	}
	var start bool
	if report != nil {
		start, _ = s.turns.add(report)
	}
	g.mu.Unlock()
	if s.cfg.onStep != nil {
		s.cfg.onStep("generation", string(from), string(ev), "", string(to))
	}

	switch to {
	case genBad:
		g.fire(genClose, genPayload{cause: causeLost, own: d.own})
	case genClosing:
		g.shutdownWork(d.own)
	case genReleased:
		if term != nil {
			s.procs.remove(term)
		}
		// A retired generation keeps no timer that would hold it in
		// memory for CloseTimeout.
		g.expiry.Stop()
	}
	s.startLoop(start, d.own)
	return true
}

// releaseReport is the report of the first of release and expiry, under
// g.mu: the failed attempt, or the lost connection, with whether the
// process is gone; nil for a generation the supervisor retired.
func (g *generation) releaseReport(released bool) func() {
	s, c := g.sup, g.life.closed
	switch g.life.cause {
	case causeFailed:
		return func() { s.attemptDone(g, nil, markPermanent(g.withCause(c.err)), released) }
	case causeLost:
		return func() { s.lost(g, g.withCause(c.err), c.at, released) }
	}
	return nil
}

// shutdownWork is the entry action of closing: retire the in-flight calls
// (so that the SDK's graceful Close cannot wait on them), close the
// session, and terminate the transport's process beside it; the release
// fires when the process is gone.
func (g *generation) shutdownWork(own bool) {
	s := g.sup
	g.mu.Lock()
	natural := g.life.natural
	sess, t := g.sess, g.transport
	g.mu.Unlock()
	if !natural {
		// A session that ended by itself has had its calls retired by
		// the SDK already, and cancelling would race the wait of a call
		// whose reply did arrive; its context is then never cancelled,
		// which holds no goroutine.
		g.cancel()
		g.calls.close(true, s.clk.Now())
	}
	// The session's Close may wait on the server (an HTTP DELETE, a write
	// to a pipe nobody reads): the process is terminated beside it, not
	// after it, and the barrier is the process.
	go func() {
		defer s.workers.Done() // added by the transition into closing
		if sess != nil {
			_ = sess.Close()
		}
		g.calls.close(false, s.clk.Now())
	}()
	term, ok := t.(Terminator)
	if !ok {
		g.fire(genRelease, genPayload{own: own}) // no process: nothing can outlive the session
		return
	}
	g.mu.Lock()
	g.life.term = term
	g.mu.Unlock()
	// A swap of g's tools under way finishes before the process is
	// terminated; later ones see g down (resyncDone).
	g.publishing <- struct{}{}
	<-g.publishing
	gone := plantCloseBarrier(terminateWithin(term, s.cfg.CloseTimeout))
	switch _, reports := term.(transport.Owned); {
	case isDone(gone):
		g.fire(genRelease, genPayload{own: own}) // found gone already
	case reports:
		// Its ProcessGone comes on the goroutine that reaped it, which
		// saves a goroutine's wake-up on the way from the process's end
		// to the loop. One that came before closing was ignored, and the
		// process's channel was closed before it: isDone saw that.
	default:
		go func() {
			<-gone
			g.fire(genRelease, genPayload{own: true})
		}()
	}
}

// shutdown retires the generation (a close the supervisor decides: its
// own disposal, a strict startup) and returns the released channel; a
// generation already closing is left as it is.
func (g *generation) shutdown() <-chan struct{} {
	g.fire(genClose, genPayload{cause: causeRetired})
	return g.released
}

// shutdownAndWait is the close barrier: shut down and wait for the release,
// at most CloseTimeout on the supervisor's clock. It reports whether the
// generation was released in time.
func (g *generation) shutdownAndWait() bool { return waitOrExpire(g.shutdown(), g.expired) }

// waitOrExpire waits for done or expired and reports whether done was
// reached; when both are ready, done wins.
func waitOrExpire(done, expired <-chan struct{}) bool {
	select {
	case <-done:
		return true
	case <-expired:
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
}

// attemptDone is the outcome of the pending attempt: its tools, or why it
// failed and whether its process is gone.
func (s *Supervisor) attemptDone(g *generation, tools []Tool, err error, released bool) {
	if plantFence(g != s.pending) {
		return // fenced: disposal retired it
	}
	first := !s.readyDone
	if err == nil {
		g.publishing <- struct{}{}
		serr := s.swap(g, tools)
		<-g.publishing
		if serr != nil {
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
			s.pub.unpublish()
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
			s.syncFire(g, syncChanged)
		}
		s.syncFire(g, syncListed)
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
	var how string
	if status != 0 {
		how = g.signInHow()
		ferr = &AuthError{Server: s.cfg.Name, Status: status, Generation: g.id, SignIn: how, Err: redact.Error(err)}
	}
	// Ready's and Reconnect's callers hear the outcome once the machine
	// has moved on from connecting, so that State then reports where it
	// led.
	defer s.resolveReady(ferr)
	waiters := s.waiters
	s.waiters = nil
	defer answer(waiters, ferr)
	if first && s.cfg.FailOnStartupError {
		// Start is about to Close: dispose now, with the reason recorded
		// (Ready's answer, before disposal answers it with ErrClosed).
		// A process not yet confirmed gone is waited for by disposal, so
		// that Start leaves nothing running or says that it may have.
		s.resolveReady(ferr)
		if !released {
			s.stuck = g
		}
		s.fire(EventDispose, Payload{Attempt: g.attempt, Err: ferr, Generation: g.id})
		return
	}
	if status != 0 {
		if !released {
			s.stuck = g
		}
		s.waiter = g.credentialWaiter()
		s.fire(EventAttemptFailed, Payload{Attempt: g.attempt, MaxAttempts: s.cfg.policy.MaxAttempts, Err: ferr, Generation: g.id,
			released: released, enabled: s.cfg.policy.Enabled, refused: true, signIn: how != ""})
		return
	}
	if errors.Is(err, ErrPermanent) {
		s.permanentRun++
	} else {
		s.permanentRun = 0
	}
	p := s.outcome(g, g.attempt, ferr, released)
	p.permanent = s.permanentRun >= 2
	s.fire(EventAttemptFailed, p)
}

// established runs on the loop once g's tools are swapped in: g becomes
// the generation WithSession uses, its catalog is published, and the
// subscriptions made or ended while it connected reach it.
func (s *Supervisor) established(g *generation) {
	s.ext.live.Store(g)
	s.catchUpSubscriptions(g)
	s.pub.publishCatalog(g.ext.listed)
	if g.ext.establish() {
		g.catalogChanged()
	}
}

// authRefused returns the HTTP status with which g's server refused
// authorization, or 0 when the attempt failed for another reason.
func (g *generation) authRefused() int {
	g.mu.Lock()
	t := g.transport
	g.mu.Unlock()
	if ht, ok := t.(*transport.HTTP); ok {
		return ht.Refused()
	}
	return 0
}

// lost is the end of an established generation's session; at is when its
// connection was first known bad, where its uptime ends.
func (s *Supervisor) lost(g *generation, err error, at time.Time, released bool) {
	if g != s.current || !s.machine.Can(EventConnectionLost) {
		return // fenced: a retired generation, or disposal closed it
	}
	if how := g.signInHow(); how != "" {
		// The credential expired and could not be refreshed: a sign-in,
		// not an outage, so no budget is charged.
		aerr := &AuthError{Server: s.cfg.Name, Status: g.authRefused(), Generation: g.id, SignIn: how, Err: redact.Error(err)}
		if !released {
			s.stuck = g
		}
		s.waiter = g.credentialWaiter()
		s.fire(EventConnectionLost, Payload{Err: aerr, Generation: g.id, MaxAttempts: s.cfg.policy.MaxAttempts,
			released: released, enabled: s.cfg.policy.Enabled, signIn: true})
		return
	}
	lerr := &LostError{Server: s.cfg.Name, Generation: g.id, Err: redact.Error(err)}
	s.fire(EventConnectionLost, s.outcomeAt(g, 0, lerr, released, at))
}

// signInHow returns how a person signs in when g's OAuth handler last
// said that it holds no usable credential, or "".
func (g *generation) signInHow() string {
	g.mu.Lock()
	t := g.transport
	g.mu.Unlock()
	ht, ok := t.(*transport.HTTP)
	if !ok {
		return ""
	}
	err := ht.SignIn()
	if err == nil {
		return ""
	}
	var se *SignInError
	if errors.As(err, &se) && se.How != "" {
		return redact.Line(se.How)
	}
	return "sign in to the server"
}

// credentialWaiter returns g's OAuth handler if it can tell when a
// credential arrives, or nil.
func (g *generation) credentialWaiter() CredentialWaiter {
	g.mu.Lock()
	t := g.transport
	g.mu.Unlock()
	if ht, ok := t.(*transport.HTTP); ok {
		w, _ := ht.Handler().(CredentialWaiter)
		return w
	}
	return nil
}

// CredentialWaiter is implemented by an [HTTP.OAuthHandler] that can tell
// when a credential arrives (a person signed in, perhaps in another
// process). In [NeedsAuthorization] the supervisor calls WaitCredential
// on a goroutine of its own and, when it returns nil, fires
// [EventAuthorized], which starts the next attempt. Without it, only
// [Supervisor.Reconnect] leaves that state.
type CredentialWaiter interface {
	// WaitCredential returns nil once the handler holds a credential it
	// has not been refused with, at once if it already does, or ctx's
	// error when ctx ends first (the supervisor left the state).
	WaitCredential(ctx context.Context) error
}

// awaitCredential is the entry action of needs-authorization: with a
// handler that can tell, the loop fires authorized once it has a
// credential. The exit action (stopAwait) ends the wait.
func (s *Supervisor) awaitCredential() {
	w := s.waiter
	if w == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.credWait = cancel
	s.workers.Add(1)
	go func() {
		defer s.workers.Done()
		if w.WaitCredential(ctx) != nil {
			return
		}
		s.postHere(func() {
			if ctx.Err() == nil && s.machine.Can(EventAuthorized) {
				s.fire(EventAuthorized, Payload{MaxAttempts: s.cfg.policy.MaxAttempts, released: true, enabled: s.cfg.policy.Enabled})
			}
		})
	}()
}

// stopAwait is the exit action of needs-authorization.
func (s *Supervisor) stopAwait() {
	if s.credWait != nil {
		s.credWait()
		s.credWait = nil
	}
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
	p := Payload{Attempt: attempt, Err: err, Generation: g.id, released: released, enabled: s.cfg.policy.Enabled}
	if !released {
		s.stuck = g
		return p
	}
	d := s.budget.DownAt(t)
	p.Attempt, p.MaxAttempts, p.Delay, p.retry = d.Attempt, d.MaxAttempts, d.Delay, d.Retry
	if !d.Retry && p.enabled {
		p.Delay = s.cfg.policy.ProbeInterval
	}
	p.Delay = retryAfterFloor(p.Delay, err)
	return p
}

// retryAfterFloor raises a delay to what an HTTP server asked for with
// Retry-After on the failure err reports, at most [MaxRetryAfter].
func retryAfterFloor(d time.Duration, err error) time.Duration {
	var he *HTTPError
	if d <= 0 || !errors.As(err, &he) || he.RetryAfter <= d {
		return d
	}
	return min(he.RetryAfter, MaxRetryAfter)
}

func (s *Supervisor) resolveReady(err error) {
	if s.readyDone {
		return
	}
	s.readyDone = true
	s.readyErr = err
	close(s.ready)
}

// retryTimer is an armed backoff or probe: once its timer has fired, the
// loop fires its event (backoff-elapsed or probe) with its payload.
type retryTimer struct {
	timer   *clock.Timer // nil: the delay is under immediateDelay
	event   Event
	payload Payload
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

// armProbe is the entry action of exhausted: with a ProbeInterval, the
// loop fires probe once the payload's delay (the interval, or a longer
// Retry-After) has passed.
func (s *Supervisor) armProbe(p Payload) {
	if s.cfg.policy.ProbeInterval <= 0 || p.Delay <= 0 {
		return
	}
	s.retry = &retryTimer{event: EventProbe, payload: p}
	s.retry.timer = s.afterDelay(s.retry)
}

// swap is phase two of a tool sync, run on the loop: the status counts
// g's hidden tools, the publisher swaps next in (see [publisher.swap]),
// and a tool it could not restore after a failed swap is logged.
func (s *Supervisor) swap(g *generation, next []Tool) error {
	s.mu.Lock()
	s.status.HiddenTools = int(g.hidden.Load())
	s.mu.Unlock()
	lost, err := s.pub.swap(next)
	for _, l := range lost {
		s.cfg.Logger.Error("tool dropped: the registry refused to restore it after a failed swap; use a registry that implements conn.Replacer",
			"server", s.cfg.Name, "generation", g.id, "tool", l.tool.Name, "err", l.err)
	}
	return err
}

func (s *Supervisor) setToolNames(names []string) {
	s.mu.Lock()
	s.status.Tools = names
	s.mu.Unlock()
}

// newSync returns g's tool-sync machine in state; entering listing
// (never the initial state, which is the attempt's listing) starts a
// re-sync.
func (s *Supervisor) newSync(g *generation, state syncState) *fsm.Machine[syncState, syncEvent, struct{}] {
	table, err := compiledSync()
	if err != nil {
		panic(fmt.Sprintf("conn: tool-sync table: %v", err)) // syncTable is tested to be valid
	}
	m, err := table.NewIn(state, fsm.Options[syncState, syncEvent, struct{}]{
		OnEnter: map[syncState]func(context.Context, fsm.Step[syncState, syncEvent, struct{}]){
			syncListing: func(_ context.Context, st fsm.Step[syncState, syncEvent, struct{}]) {
				if st.Event == syncChanged {
					// Coalesced like the sync itself: a flood gets one
					// INFO line a second, counting the changes it stands for.
					level, held := slog.LevelDebug, 0
					if ok, n := s.resyncLog.allow(s.clk.Now(), resyncLogEvery); ok {
						level, held = slog.LevelInfo, n
					}
					s.cfg.Logger.Log(context.Background(), level, "tool list changed, re-syncing",
						"server", s.cfg.Name, "state", string(s.State()), "generation", g.id, "coalesced", held)
				}
				s.resync(g)
			},
		},
		Observer: func(st fsm.Step[syncState, syncEvent, struct{}]) {
			if s.cfg.onStep != nil {
				s.cfg.onStep("tool-sync", string(st.From), string(st.Event), st.When, string(st.To))
			}
		},
		OnError: func(ev syncEvent, err error) {
			s.cfg.Logger.Error("tool-sync machine rejected a queued event; this is a bug in mcpfsm",
				"server", s.cfg.Name, "event", string(ev), "err", err)
		},
	})
	if err != nil {
		panic(fmt.Sprintf("conn: tool-sync table: %v", err)) // syncTable is tested to be valid
	}
	return m
}

// syncFire runs one event on g's tool-sync machine. Only the loop fires.
//
// A generation at rest in in-sync, nearly all of its life, keeps no
// machine (about 1.4 KiB each): the machine is dropped when it reaches
// in-sync, its engine handed back for the next machine's build (see
// fsm.Machine.Rest), and made again, in in-sync, for the next event.
func (s *Supervisor) syncFire(g *generation, ev syncEvent) {
	if g.sync == nil {
		g.sync = s.newSync(g, syncIdle)
	}
	if err := g.sync.Fire(context.Background(), ev); err != nil {
		s.cfg.Logger.Error("tool-sync machine rejected an event; this is a bug in mcpfsm",
			"server", s.cfg.Name, "generation", g.id, "event", string(ev), "err", err)
	}
	if g.sync.State() == syncIdle {
		g.sync.Rest()
		g.sync = nil
	}
}

// syncState is the state of g's tool-sync machine; only the loop reads it.
func (g *generation) syncState() syncState {
	if g.sync == nil {
		return syncIdle
	}
	return g.sync.State()
}

// listChanged handles the kick of a list_changed notification, for the
// generation whose tools are registered (unless it is down) and for the
// attempt in flight, whose machine is still listing.
func (s *Supervisor) listChanged() {
	for _, g := range []*generation{s.current, s.pending} {
		if g != nil && !g.down() && g.changed.Swap(false) {
			s.syncFire(g, syncChanged)
		}
	}
}

// resync lists g's tools off the loop and hands the result back to it.
func (s *Supervisor) resync(g *generation) {
	s.workers.Add(1)
	go func() {
		defer s.workers.Done()
		ctx, cancel := withTimeout(g.ctx, s.clk, s.cfg.ConnectTimeout)
		defer cancel()
		tools, err := g.listTools(ctx)
		if err != nil {
			err = g.requestFailed(err) // a refused connection is a loss
		}
		s.post(func() { s.resyncDone(g, tools, err) })
	}()
}

// resyncDone swaps a re-sync's tools in, or logs why it could not; either
// way the previous tools stay until a listing succeeds. A listing the
// server did not complete (no answer within ConnectTimeout, an error
// answer) is tried again after the reconnect policy's delay, doubling per
// failure: no list change may come to start the next one, and the
// registry would stay behind the server for good. An invalid list or a
// refused registration waits for the server's next change.
func (s *Supervisor) resyncDone(g *generation, tools []Tool, err error) {
	if g != s.current {
		return // retired while it listed: whatever it fetched is stale
	}
	// Down is checked holding the publishing token, which shutdownWork
	// takes before it terminates the process: a generation that went down
	// while it listed (its process may be terminated by now) publishes
	// nothing, and one still up finishes its swap before the termination.
	g.publishing <- struct{}{}
	// A listing cut short by the connection's end is no news either: the
	// end reaches the loop by itself (a process's pipes end the session;
	// requestFailed marked any other transport bad), before or after this
	// at the same instant.
	if g.down() || transport.ConnectionGone(err) {
		<-g.publishing
		return // a failure caused by closing it is no news either
	}
	retry := err != nil && !errors.Is(err, ErrInvalidToolList)
	// The same tools again (a re-listing that found no change) leave the
	// registry alone, so nobody hears of a change.
	if err == nil && !s.publishedAre(g, tools) {
		err = s.swap(g, tools)
	}
	<-g.publishing
	if err != nil {
		err = redact.Error(err)
		attrs := []any{"server", s.cfg.Name, "state", string(s.State()), "generation", g.id, "err", err}
		if retry {
			attrs = append(attrs, "retry", g.retryResync(s.cfg.policy.Delay))
		}
		s.cfg.Logger.Error("tool re-sync failed: "+err.Error()+"; the previous tools stay registered", attrs...)
	} else {
		g.resyncFails = 0
	}
	s.syncFire(g, syncListed)
}

// retryResync arms the next re-sync of g after delay(n) for its n-th
// failed one in a row, and returns that delay; the timer signals a list
// change, as the server would. Closing g stops it.
func (g *generation) retryResync(delay func(n int) time.Duration) time.Duration {
	g.resyncFails++
	d := delay(g.resyncFails)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closingLocked() {
		return d
	}
	if g.resyncTimer != nil {
		g.resyncTimer.Stop()
	}
	g.resyncTimer = g.sup.clk.AfterFunc(d, g.signalChanged)
	return d
}

// publishedAre reports whether the published tools are tools, of g, in
// the same order with the same definitions.
func (s *Supervisor) publishedAre(g *generation, tools []Tool) bool {
	if len(s.pub.tools) != len(tools) {
		return false
	}
	for i, p := range s.pub.tools {
		t := tools[i]
		if p.tool.gen != g || p.tool.Name != t.Name || !reflect.DeepEqual(p.tool.Raw, t.Raw) {
			return false
		}
	}
	return true
}

// resyncLogEvery is the least time between two INFO lines about tool list
// changes: a server that floods list_changed gets one line a second, each
// counting the changes it stands for, and the rest at DEBUG.
const resyncLogEvery = time.Second

// logLimiter coalesces a repeated log line. It is owned by the loop.
type logLimiter struct {
	last       time.Time
	suppressed int // lines since the last one allowed
}

// allow reports whether a line may be logged at its full level now, and
// how many were held back since the previous one.
func (l *logLimiter) allow(now time.Time, every time.Duration) (ok bool, heldBack int) {
	if !l.last.IsZero() && now.Sub(l.last) < every {
		l.suppressed++
		return false, 0
	}
	heldBack, l.last, l.suppressed = l.suppressed, now, 0
	return true, heldBack
}

// answerWaiters gives every Reconnect waiting on the attempt its outcome.
func (s *Supervisor) answerWaiters(err error) {
	answer(s.waiters, err)
	s.waiters = nil
}

func answer(waiters []chan<- error, err error) {
	for _, w := range waiters {
		w <- err
	}
}

// stuckReleased runs when the process that halted reconnecting has exited
// after all: Reconnect may start again, and the operator is told so.
func (s *Supervisor) stuckReleased() {
	s.stuckGone = true
	if s.machine.State() != Halted {
		return
	}
	s.cfg.Logger.Info("the server process that halted reconnecting has exited; Reconnect can start the server again",
		"server", s.cfg.Name, "state", string(Halted), "generation", s.stuck.id)
}
