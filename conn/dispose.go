package conn

import (
	"fmt"
	"slices"
)

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
		s.disposeErr = fmt.Errorf("conn: closing %q: a server process did not exit within %v: %w",
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
