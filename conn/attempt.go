package conn

import (
	"errors"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn/internal/bugs"
	"github.com/mcpfsm/mcpfsm/internal/redact"
)

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
	if g != s.pending && !bugs.NoGenerationFence {
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
		// A process not yet confirmed gone is waited for by disposal, so
		// that Start leaves nothing running or says that it may have.
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
		s.fire(EventAttemptFailed, Payload{Attempt: g.attempt, Err: ferr, Generation: g.id,
			released: released, enabled: s.cfg.policy.Enabled, refused: true})
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
