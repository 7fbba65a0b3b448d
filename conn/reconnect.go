package conn

import (
	"context"
	"fmt"
)

// Reconnect starts an attempt at once and returns its outcome: nil when
// the connection is established, or the attempt's [*FailedError].
//
// From a backoff (failed-retrying, lost-reconnecting) it cuts the wait
// short; from exhausted, failed-disabled, lost-disabled and
// failed-permanent it starts again where reconnecting had stopped; from
// halted it starts again only once the process that did not exit has
// exited since (otherwise it fails with an error matching
// [ErrStillRunning] and changes nothing). Each of these is the table's
// reconnect event. It resets the outage budget, so a failure of this
// attempt starts a fresh backoff series (or, for a failure no wait can
// fix, one confirming retry).
//
// While an attempt is in flight (connecting) Reconnect waits for that one
// instead of starting another, so concurrent calls share one attempt and
// all get its outcome. When already established it returns nil and
// changes nothing. After Close, and while disposing, it returns an error
// matching [ErrClosed]. If ctx ends first it returns ctx's error; the
// attempt goes on.
func (s *Supervisor) Reconnect(ctx context.Context) error {
	select {
	case <-s.closing:
		return s.closedErr()
	default:
	}
	reply := make(chan error, 1)
	if !s.post(func() { s.reconnect(reply) }) {
		return s.closedErr()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reconnect runs Reconnect on the loop. Every reply is buffered, so the
// loop never waits on a caller who gave up.
func (s *Supervisor) reconnect(reply chan<- error) {
	select {
	case <-s.closing:
		reply <- s.closedErr()
		return
	default:
	}
	switch st := s.machine.State(); st {
	case Established:
		reply <- nil
		return
	case Connecting:
		s.waiters = append(s.waiters, reply)
		return
	case Disposing, Disposed:
		reply <- s.closedErr()
		return
	case Halted:
		if s.stuck != nil && !s.stuckGone {
			reply <- fmt.Errorf("mcp server %q: not reconnecting: generation %d's server process has not exited since it was retired (%w); stop it, then reconnect",
				s.cfg.Name, s.stuck.id, ErrStillRunning)
			return
		}
	}
	if !s.machine.Can(EventReconnect) {
		reply <- fmt.Errorf("mcp server %q: cannot reconnect from state %s", s.cfg.Name, s.machine.State())
		return
	}
	s.budget.Reset()
	s.permanentRun = 0
	s.stuck, s.stuckGone = nil, false
	s.waiters = append(s.waiters, reply)
	s.fire(EventReconnect, Payload{MaxAttempts: s.cfg.policy.MaxAttempts, released: true, enabled: s.cfg.policy.Enabled})
}
