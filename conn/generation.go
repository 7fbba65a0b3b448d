package conn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/fsm"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// generation is one incarnation of the server: one transport, one
// mcp.Client, one session. Generations are never reused; the supervisor's
// fence (its pending and current pointers) decides which one may still
// change anything.
type generation struct {
	hidden  atomic.Int32 // tools of its last listing that Config.Filter left out
	id      uint64
	attempt int // 0 for the initial attempt, n for the n-th reconnect
	sup     *Supervisor
	ctx     context.Context // cancelled when the generation is shut down
	cancel  context.CancelFunc

	down    atomic.Bool // the session ended or is being shut down: calls fail fast
	changed atomic.Bool // a list_changed arrived and is not yet handled
	natural atomic.Bool // the session ended by itself before shutdown
	calls   calls       // in-flight tool calls

	mu        sync.Mutex
	closed    bool // shutdown started: nothing new may be attached
	ka        keepAlive
	transport mcp.Transport
	wire      *wireTransport // what reached the server (wire.go); nil for Streamable HTTP
	sess      *mcp.ClientSession
	protocol  string // the negotiated protocol version; set before the session is attached

	live liveness // when and why the connection was first known bad

	shutdownOnce sync.Once
	relMu        sync.Mutex
	relHook      func(released, here bool) // see afterRelease
	released     chan struct{}             // closed once the transport's process is gone (at once without one)
	expired      chan struct{}             // closed CloseTimeout after shutdown started
	expiry       *clock.Timer              // closes expired; stopped at the release

	// Owned by the supervisor's loop.
	sync *fsm.Machine[SyncState, SyncEvent, struct{}] // see SyncTable; nil while in sync (syncFire)

	ext genSession // the session beyond its tools (session.go)
}

func (s *Supervisor) newGeneration(attempt int) *generation {
	s.genSeq++
	ctx, cancel := context.WithCancel(context.Background())
	g := &generation{id: s.genSeq, attempt: attempt, sup: s, ctx: ctx, cancel: cancel,
		released: make(chan struct{}), expired: make(chan struct{}), live: liveness{bad: make(chan struct{})}}
	g.sync = s.newSync(g, SyncListing) // the attempt's listing
	return g
}

// run is the generation's goroutine: the attempt, then watching the
// session until it ends. Sending the attempt's result before watching, on
// one goroutine, guarantees the loop hears "up" before "lost".
func (g *generation) run() {
	s := g.sup
	defer s.workers.Done()
	tools, err := g.connect()
	if err != nil {
		g.down.Store(true)
		released := g.shutdownAndWait()
		err = markPermanent(g.withCause(err))
		s.postHere(func() { s.attemptDone(g, nil, err, released) })
		return
	}
	g.markGood(s.clk.Now())
	// Armed before the loop hears "up", so that whoever sees the
	// established transition (a test advancing a fake clock) knows the
	// first ping is already scheduled.
	g.startKeepAlive()
	s.postHere(func() { s.attemptDone(g, tools, nil, true) })
	if g.watchEnd() {
		return // ended runs once the connection is known bad
	}
	g.watch()
}

// ended closes a generation whose connection is known bad and reports the
// loss.
//
// It does not wait for the release: the loss is posted by whoever sees
// the generation released (for a stdio server, the goroutine that reaped
// it) or its close timeout expire, so that no goroutine has to be woken
// between the process's end and the loop.
func (g *generation) ended() {
	s := g.sup
	g.down.Store(true)
	g.stopKeepAlive()
	g.shutdown()
	g.afterRelease(func(released, here bool) {
		werr, at := g.withCause(g.live.err), g.live.at
		turn := func() { s.lost(g, werr, at, released) }
		if here {
			s.postHere(turn)
			return
		}
		s.post(turn)
	})
}

// afterRelease runs f, once, when the generation is released (released
// true) or its close timeout expires first (false), on the goroutine that
// sees which (at once if that is known already); f must not block unless
// told here (see releaseDecided).
func (g *generation) afterRelease(f func(released, here bool)) {
	g.relMu.Lock()
	switch {
	case isDone(g.released):
		g.relMu.Unlock()
		f(true, false)
	case isDone(g.expired):
		g.relMu.Unlock()
		f(false, false)
	default:
		g.relHook = f
		g.relMu.Unlock()
	}
}

// releaseDecided runs the afterRelease function, if one waits; when both
// the release and the expiry are in, the release wins. here reports that
// the caller is a goroutine of the generation's own with nothing left to
// do that cannot wait (see postHere).
func (g *generation) releaseDecided(here bool) {
	g.relMu.Lock()
	f := g.relHook
	g.relHook = nil
	g.relMu.Unlock()
	if f != nil {
		f(isDone(g.released), here)
	}
}

// connect opens the transport, initializes the session and fetches the
// tool list, all within ConnectTimeout.
func (g *generation) connect() ([]Tool, error) {
	s := g.sup
	ctx, cancel := withTimeout(g.ctx, s.clk, s.cfg.ConnectTimeout)
	defer cancel()
	tools, err := g.connectCtx(ctx)
	if err != nil && g.ctx.Err() == nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within ConnectTimeout (%v): %w", s.cfg.ConnectTimeout, err)
	}
	return tools, err
}

func (g *generation) connectCtx(ctx context.Context) ([]Tool, error) {
	t, err := g.open(ctx)
	if err != nil {
		return nil, err
	}
	sess, err := g.handshake(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", causeOf(ctx, err))
	}
	if !g.attach(func() { g.sess = sess }) {
		_ = sess.Close()
		return nil, ErrClosed
	}
	tools, err := g.listTools(ctx)
	if err != nil {
		return nil, err
	}
	if err := g.prepare(ctx); err != nil {
		return nil, err
	}
	return tools, nil
}

// causeOf reports an expired clock deadline as context.DeadlineExceeded
// rather than the cancellation the SDK saw.
func causeOf(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, context.DeadlineExceeded) && errors.Is(err, context.Canceled) {
		return cause
	}
	return err
}

// attach runs set under the generation's lock unless shutdown started.
func (g *generation) attach(set func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	set()
	return true
}

// shutdown starts closing the generation: cancel its context (which retires
// in-flight calls, so the SDK's graceful Close cannot wait on them), close
// the session, then terminate the transport. It returns the released
// channel at once; it is idempotent.
func (g *generation) shutdown() <-chan struct{} {
	g.shutdownOnce.Do(func() {
		// One barrier deadline per generation, armed before anything is
		// closed: every waiter shares it, and a test that sees the close
		// begin can advance a fake clock past it.
		// Once released, the timer is stopped, so that a retired
		// generation is not kept in memory for CloseTimeout.
		g.expiry = g.sup.clk.AfterFunc(g.sup.cfg.CloseTimeout, func() {
			close(g.expired)
			g.releaseDecided(false)
		})
		g.down.Store(true)
		if !g.natural.Load() {
			// The supervisor is retiring a live session: retire its
			// in-flight calls first, or the SDK's graceful Close waits on
			// them. A session that ended by itself has had its calls
			// retired by the SDK already, and cancelling would race the
			// wait of a call whose reply did arrive; its context is then
			// never cancelled, which holds no goroutine.
			g.cancel()
			g.calls.close(true)
		}
		g.mu.Lock()
		g.closed = true
		sess, t := g.sess, g.transport
		g.mu.Unlock()
		// The session's Close may wait on the server (an HTTP DELETE, a
		// write to a pipe nobody reads): the process is terminated beside
		// it, not after it, and the barrier is the process.
		g.sup.workers.Add(1)
		go func() {
			defer g.sup.workers.Done()
			if sess != nil {
				_ = sess.Close()
			}
			g.calls.close(false)
		}()
		term, ok := t.(Terminator)
		// here: see releaseDecided.
		release := func(here bool) {
			if ok {
				g.sup.procs.remove(term)
			}
			g.expiry.Stop()
			close(g.released)
			if isDone(g.expired) {
				// Released after the barrier gave up: the loop, which may
				// have halted on it, is woken to see (afterTurn).
				g.sup.post(func() {})
			}
			g.releaseDecided(here)
		}
		if !ok {
			release(false) // no process: nothing can outlive the session
			return
		}
		gone := terminateWithin(term, g.sup.cfg.CloseTimeout)
		// A transport that calls back when its process is gone, on the
		// goroutine that reaped it, saves a goroutine's wake-up on the
		// way from the process's end to the loop; any other is waited
		// for.
		// (A process found gone already is released here, on the
		// caller's goroutine, which is not that.)
		var registering atomic.Bool
		registering.Store(true)
		if n, ok := term.(exitNotifier); ok && n.onExit(func() { release(!registering.Load()) }) {
			registering.Store(false)
			return
		}
		go func() {
			<-gone
			release(true)
		}()
	})
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
