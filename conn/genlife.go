package conn

import (
	"sync/atomic"
	"time"

	"github.com/mcpfsm/mcpfsm/conn/internal/bugs"
	"github.com/mcpfsm/mcpfsm/conn/internal/transport"
)

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
		g.calls.close(true)
	}
	// The session's Close may wait on the server (an HTTP DELETE, a write
	// to a pipe nobody reads): the process is terminated beside it, not
	// after it, and the barrier is the process.
	go func() {
		defer s.workers.Done() // added by the transition into closing
		if sess != nil {
			_ = sess.Close()
		}
		g.calls.close(false)
	}()
	term, ok := t.(Terminator)
	if !ok {
		g.fire(genRelease, genPayload{own: own}) // no process: nothing can outlive the session
		return
	}
	g.mu.Lock()
	g.life.term = term
	g.mu.Unlock()
	gone := terminateWithin(term, s.cfg.CloseTimeout)
	if bugs.SkipCloseBarrier {
		gone = closedChan
	}
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
