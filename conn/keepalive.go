package conn

import (
	"fmt"

	"github.com/benbjohnson/clock"
)

// keepAlive pings an established generation every Config.KeepAlive, each
// ping bounded by the same interval, on the supervisor's clock. A ping
// that fails ends the generation the way the supervisor ends any live one:
// in-flight calls are retired first, so a server that hangs with calls
// outstanding is noticed within two intervals, not after CallTimeout (the
// SDK's own keep-alive closes gracefully and so waits for those calls, and
// does not run at all on protocol 2026-07-28).
type keepAlive struct {
	timer   *clock.Timer
	stopped bool // no more pings; guarded by generation.mu
}

// startKeepAliveLocked arms the first ping, under g.mu, on the
// transition into up (genlife.go).
func (g *generation) startKeepAliveLocked() {
	s := g.sup
	if s.cfg.KeepAlive <= 0 || g.closingLocked() || g.ka.stopped {
		return
	}
	g.ka.timer = s.clk.AfterFunc(s.cfg.KeepAlive, g.ping)
}

// stopKeepAliveLocked stops pinging, under g.mu: the transition into bad
// runs it, so a ping never starts once the connection is known bad.
func (g *generation) stopKeepAliveLocked() {
	g.ka.stopped = true
	if g.ka.timer != nil {
		g.ka.timer.Stop()
	}
}

func (g *generation) ping() {
	s := g.sup
	g.mu.Lock()
	if g.ka.stopped || g.closingLocked() {
		g.mu.Unlock()
		return
	}
	// Counted as a worker while it runs, so Close waits for it; the
	// generation's goroutine still holds its own count here (it calls
	// stopKeepAlive, under the same lock, before it lets go).
	s.workers.Add(1)
	g.mu.Unlock()
	defer s.workers.Done()

	ctx, cancel := withTimeout(g.ctx, s.clk, s.cfg.KeepAlive)
	err := g.probeLive(ctx)
	cancel()
	g.mu.Lock()
	if g.ka.stopped || g.closingLocked() {
		g.mu.Unlock()
		return
	}
	if err != nil {
		g.mu.Unlock()
		// Nothing since the last answer shows the connection was good:
		// not even that this probe was sent on time, on a loaded host.
		g.markBad(g.lastGood(), fmt.Errorf("keep-alive %s got no answer within KeepAlive (%v): %w", g.probeName(), s.cfg.KeepAlive, causeOf(ctx, err)))
		return
	}
	g.markGood(s.clk.Now())
	g.ka.timer.Reset(s.cfg.KeepAlive)
	g.mu.Unlock()
}
