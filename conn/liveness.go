package conn

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/mcpfsm/mcpfsm/conn/internal/transport"
)

// liveness records when a generation's connection was last known good.
// The outage budget counts uptime to the moment it was first known bad
// (the went-bad transition records it), not to the release of the
// generation, which a server that ignores EOF and SIGTERM can delay by
// whole grace periods.
type liveness struct {
	// good is when the connection was last known good, in Unix
	// nanoseconds on the supervisor's clock: when its tools were listed,
	// then at every answered keep-alive ping. A ping that goes unanswered
	// is bad news about everything since the last answer, so the uptime
	// it ends is counted to then, however late the ping ran.
	good atomic.Int64
}

// markGood records that the connection answered at t.
func (g *generation) markGood(t time.Time) { g.live.good.Store(t.UnixNano()) }

// lastGood returns when the connection was last known good.
func (g *generation) lastGood() time.Time { return time.Unix(0, g.live.good.Load()) }

// errServerExited is the loss of a session whose server process exited.
var errServerExited = errors.New("server process exited")

// watch waits, on the generation's goroutine, for the session to end by
// itself: the went-bad event, natural (the SDK has already retired
// pending calls, and cancelling now could fail a call whose reply did
// arrive). Bad news from elsewhere (a failed ping, a request that found
// the server gone) closes the generation at once, without waiting for the
// session's end: an HTTP session's end waits on requests to the server
// that failed the ping. The session ends anyway when the shutdown closes
// it, and watch returns; its went-bad is then no news.
func (g *generation) watch() {
	err := g.sess.Wait()
	g.fire(genWentBad, genPayload{at: g.sup.clk.Now(), err: err, natural: true})
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
	if !transport.ConnectionGone(err) {
		return err
	}
	g.mu.Lock()
	_, ownsProcess := g.transport.(Terminator)
	g.mu.Unlock()
	if !ownsProcess {
		g.markBad(g.sup.clk.Now(), err)
	}
	return err
}
