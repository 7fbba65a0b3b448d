package conn

import (
	"context"
	"fmt"

	"time"

	"github.com/mcpfsm/mcpfsm/fsm"
)

// Transition is one step of the connection machine, as delivered to
// Config.OnTransition.
type Transition struct {
	Server      string
	From, To    State
	Event       Event
	At          time.Time     // on the supervisor's clock
	Attempt     int           // reconnect attempt: 0 initial, n of MaxAttempts after a failure or loss
	MaxAttempts int           // the policy's MaxAttempts where Attempt counts against it
	Delay       time.Duration // backoff before the next attempt (backoff states only)
	// Err is why the step happened, when it reports a failure: a
	// *FailedError (the server did not come up) or a *LostError (an
	// established connection dropped).
	Err        error
	Generation uint64 // the generation the step concerns
}

// Status is a snapshot of a [Supervisor].
type Status struct {
	Server      string
	State       State
	Attempt     int           // as in Transition
	MaxAttempts int           // the policy's MaxAttempts
	NextRetry   time.Time     // when the next attempt starts; zero unless backing off
	LastErr     error         // the most recent failure or loss, if any
	Generation  uint64        // the latest generation started
	Tools       []string      // public names of the registered tools, sorted
	Since       time.Time     // when the current state was entered
	Delay       time.Duration // the current backoff delay, if backing off
}

// recoverHint is the manual recovery every terminal failure message names.
const recoverHint = "fix the server, then reload its configuration or restart the host"

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
		Server: s.cfg.Name, From: st.From, To: st.To, Event: st.Event, At: now,
		Attempt: p.Attempt, MaxAttempts: p.MaxAttempts, Delay: p.Delay, Err: p.Err, Generation: p.Generation,
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
	s.status.Generation = s.genSeq
	s.mu.Unlock()
	s.logTransition(t)
	if s.cfg.OnTransition != nil {
		s.cfg.OnTransition(t)
	}
}

// logTransition writes the log line of a transition. The message is built
// from the target state's phrase, so "connection failed" and "connection
// lost" follow from the state and cannot be mixed up.
func (s *Supervisor) logTransition(t Transition) {
	attrs := []any{"server", t.Server, "state", string(t.To), "generation", t.Generation}
	var msg string
	switch t.To {
	case FailedRetrying, LostReconnecting:
		msg = fmt.Sprintf("%s in %v (attempt %d/%d)", t.To.Phrase(), t.Delay, t.Attempt, t.MaxAttempts)
		attrs = append(attrs, "attempt", t.Attempt, "max_attempts", t.MaxAttempts, "delay", t.Delay)
	case Established:
		if t.Attempt == 0 {
			msg = "connected and registered tools"
		} else {
			msg = fmt.Sprintf("reconnected and re-synced tools (attempt %d/%d)", t.Attempt, t.MaxAttempts)
			attrs = append(attrs, "attempt", t.Attempt, "max_attempts", t.MaxAttempts)
		}
	case Exhausted:
		msg = fmt.Sprintf("%s after %d consecutive failed reconnect attempts; tools unregistered; %s",
			t.To.Phrase(), t.MaxAttempts, recoverHint)
		attrs = append(attrs, "max_attempts", t.MaxAttempts)
	case FailedDisabled:
		msg = t.To.Phrase() + "; no tools were registered; " + recoverHint
	case LostDisabled:
		msg = t.To.Phrase() + "; registered tools will fail until you " + recoverHint
	case Halted:
		msg = fmt.Sprintf("%s: it did not exit within CloseTimeout (%v); not reconnecting, to avoid two server processes at once; %s",
			t.To.Phrase(), s.cfg.CloseTimeout, recoverHint)
	default:
		msg = t.To.Phrase()
	}
	if t.Err != nil {
		attrs = append(attrs, "err", t.Err)
	}
	s.cfg.Logger.Log(context.Background(), t.To.Level(), msg, attrs...)
}
