package conn

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// liveness records the moment a generation's connection was first known
// bad, and why: the session ended (EOF, the process exited), a keep-alive
// ping got no answer, or a request found the server gone. The outage
// budget counts uptime to that moment, not to the release of the
// generation, which a server that ignores EOF and SIGTERM can delay by
// whole grace periods.
type liveness struct {
	// good is when the connection was last known good, in Unix
	// nanoseconds on the supervisor's clock: when its tools were listed,
	// then at every answered keep-alive ping. A ping that goes unanswered
	// is bad news about everything since the last answer, so the uptime
	// it ends is counted to then, however late the ping ran.
	good atomic.Int64
	once sync.Once
	bad  chan struct{} // closed by markBad
	mu   sync.Mutex
	hook func(here bool) // called once after bad is closed (see onBad)
	// Written once before bad is closed; read after.
	at  time.Time
	err error
}

// markGood records that the connection answered at t.
func (g *generation) markGood(t time.Time) { g.live.good.Store(t.UnixNano()) }

// lastGood returns when the connection was last known good.
func (g *generation) lastGood() time.Time { return time.Unix(0, g.live.good.Load()) }

// markBad records the first bad news; later news is ignored.
func (g *generation) markBad(at time.Time, err error) { g.markBadOn(at, err, false) }

// markBadOn is markBad; here tells the onBad function that it may do its
// work on the caller's goroutine, which nothing there would block.
func (g *generation) markBadOn(at time.Time, err error, here bool) {
	g.live.once.Do(func() {
		g.live.at, g.live.err = at, err
		close(g.live.bad)
	})
	g.live.mu.Lock()
	f := g.live.hook
	g.live.hook = nil
	g.live.mu.Unlock()
	if f != nil {
		f(here)
	}
}

// onBad arranges for f to be called, once, when the connection is known
// bad (at once if it is already); f must not block unless it is told
// here (see markBadOn).
func (g *generation) onBad(f func(here bool)) {
	g.live.mu.Lock()
	if g.badCause() != nil {
		g.live.mu.Unlock()
		f(false)
		return
	}
	g.live.hook = f
	g.live.mu.Unlock()
}

// watchEnd is watch without a goroutine waiting: where the transport tells
// of the session's end (a stdio server's exit, which may come before its
// stdout's EOF, or the SDK's close of the connection), the end and every
// other bad news start ended on a goroutine of its own, and watchEnd
// returns true at once. It returns false for Streamable HTTP, whose
// connection the SDK keeps unwrapped.
func (g *generation) watchEnd() bool {
	s := g.sup
	n, ok := g.transport.(endNotifier)
	if !ok {
		// Every transport but Streamable HTTP has a wire that sees the
		// session's end.
		w := g.wireConn()
		if w == nil {
			return false
		}
		n = w
	}
	s.workers.Add(1) // for ended
	g.onBad(func(here bool) {
		if here {
			defer s.workers.Done()
			g.ended()
			return
		}
		go func() {
			defer s.workers.Done()
			g.ended()
		}()
	})
	registered := n.notifyEnd(func(exited bool) {
		if exited {
			// The SDK retires pending calls once it reads the rest of
			// the pipe (a dead server's last replies are delivered), and
			// cancelling now could fail a call whose reply did arrive.
			g.natural.Store(true)
			// This is the goroutine that reaps the process, which
			// blocks on nothing: ended runs here, and the loss reaches
			// the loop with one wake-up fewer (it is posted from here
			// too, once the process is reaped).
			g.markBadOn(s.clk.Now(), errServerExited, true)
			return
		}
		// The SDK is closing the connection: the session ended by
		// itself, or a shutdown (already marked bad) closes it.
		s.workers.Add(1)
		go func() {
			defer s.workers.Done()
			err := g.sess.Wait()
			if g.badCause() == nil {
				// It ended by itself: the SDK has retired pending calls
				// (see watch).
				g.natural.Store(true)
			}
			g.markBad(s.clk.Now(), err)
		}()
	})
	if !registered {
		// Never connected (cannot happen once established): watch instead.
		g.markBad(s.clk.Now(), errors.New("conn: transport lost its connection"))
	}
	return true
}

// errServerExited is the loss of a session whose server process exited.
var errServerExited = errors.New("server process exited")

// badCause returns why the connection is bad, or nil if it is not known to be.
func (g *generation) badCause() error {
	select {
	case <-g.live.bad:
		return g.live.err
	default:
		return nil
	}
}

// watch waits, on the generation's goroutine, for the session to end by
// itself, and marks the connection bad then. Bad news from elsewhere (a
// failed ping, a request that found the server gone) starts ended on a
// goroutine of its own at once, without waiting for the session's end: an
// HTTP session's end waits on requests to the server that failed the
// ping. The session ends anyway when ended closes it, and watch returns.
func (g *generation) watch() {
	s := g.sup
	s.workers.Add(1) // for ended
	g.onBad(func(bool) {
		go func() {
			defer s.workers.Done()
			g.ended()
		}()
	})
	err := g.sess.Wait()
	if g.badCause() == nil {
		// The session ended by itself: the SDK has already retired
		// pending calls, and cancelling now could fail a call whose reply
		// did arrive.
		g.natural.Store(true)
	}
	g.markBad(s.clk.Now(), err)
}

// requestFailed is the cause to report for a request that failed because
// the connection is gone. A transport without a process has no other way
// to tell the supervisor (a refused or reset HTTP connection does not end
// the SDK's session), so the failure ends the generation: a loss. A
// process's pipes end the session by themselves.
func (g *generation) requestFailed(err error) error {
	if cause := g.badCause(); cause != nil {
		return cause
	}
	if !connectionGone(err) {
		return err
	}
	g.mu.Lock()
	_, ownsProcess := g.transport.(Terminator)
	g.mu.Unlock()
	if !ownsProcess {
		g.markBad(g.sup.clk.Now(), err)
		g.shutdown()
	}
	return err
}

// boundedTerminator is a [Terminator] that can fit its shutdown schedule
// into a deadline.
type boundedTerminator interface {
	terminateWithin(time.Duration) <-chan struct{}
}

// terminateWithin terminates t so that it ends within d if it can.
func terminateWithin(t Terminator, d time.Duration) <-chan struct{} {
	if bt, ok := t.(boundedTerminator); ok {
		return bt.terminateWithin(d)
	}
	return t.Terminate()
}
