package conn

import (
	"time"

	"github.com/benbjohnson/clock"
)

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
