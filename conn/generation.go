package conn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn/internal/transport"
	"github.com/mcpfsm/mcpfsm/fsm"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A generation is one incarnation of the server: its attempt (open,
// handshake, listing), the ends its transport reports (SessionEnded,
// ProcessGone), and what keeps it known good or finds it bad (liveness,
// the keep-alive and its probe). Its machine's transitions, and what the
// supervisor does with their reports, are in loop.go.

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

	changed atomic.Bool // a list_changed arrived and is not yet handled
	calls   calls       // in-flight tool calls

	// mu guards what follows and the generation machine's transitions
	// (loop.go): the state decides what may still be attached.
	mu        sync.Mutex
	life      genLife // the generation machine (generationTable)
	ka        keepAlive
	transport mcp.Transport
	wire      *transport.Wire // what reached the server; nil for Streamable HTTP
	sess      *mcp.ClientSession
	protocol  string // the negotiated protocol version; set before the session is attached

	live liveness // when the connection was last known good

	released chan struct{} // closed on entering released
	expired  chan struct{} // closed on entering expired
	expiry   *clock.Timer  // fires expire; stopped at the release

	// Owned by the supervisor's loop.
	sync        *fsm.Machine[syncState, syncEvent, struct{}] // see syncTable; nil while in sync (syncFire)
	resyncFails int                                          // failed re-syncs in a row (loop.go)

	resyncTimer *clock.Timer // the retry of a failed re-sync; guarded by mu

	// publishing is held (a token in a buffered channel of one) while the
	// loop swaps g's tools in, and taken by shutdownWork before it
	// terminates g's process: a swap that began while g was up finishes
	// first, and a re-sync that takes it after g went down publishes
	// nothing. No tools are registered of a process conn has terminated.
	publishing chan struct{}

	ext genSession // the session beyond its tools (session.go)
}

func (s *Supervisor) newGeneration(attempt int) *generation {
	s.genSeq++
	ctx, cancel := context.WithCancel(context.Background())
	g := &generation{id: s.genSeq, attempt: attempt, sup: s, ctx: ctx, cancel: cancel,
		released: make(chan struct{}), expired: make(chan struct{}), publishing: make(chan struct{}, 1)}
	g.sync = s.newSync(g, syncListing) // the attempt's listing
	return g
}

// run is the generation's goroutine: the attempt, then watching the
// session until it ends. Its outcome is an event of the generation
// machine: connected reports the tools to the loop at once; a failure
// closes the generation, whose release (or expiry) reports it. Reports
// are queued in the order of the transitions, so the loop hears "up"
// before "lost".
func (g *generation) run() {
	defer g.sup.workers.Done()
	tools, err := g.connect()
	if err != nil {
		g.fire(genClose, genPayload{cause: causeFailed, err: err, own: true})
		return
	}
	g.markGood(g.sup.clk.Now())
	if !g.fire(genConnected, genPayload{tools: tools, own: true}) {
		return // retired meanwhile: disposal is waiting for its release
	}
	if !g.reportsEnd() {
		g.watch() // Streamable HTTP: nothing tells of the end but Wait
		return
	}
	// The transport reports its end (SessionEnded); one that came while
	// the attempt ran was kept for now.
	g.mu.Lock()
	early, exited := g.life.early, g.life.earlyExited
	g.mu.Unlock()
	if early {
		g.ended(exited, true)
	}
}

// connect opens the transport, initializes the session and fetches the
// tool list, all within ConnectTimeout.
func (g *generation) connect() ([]Tool, error) {
	s := g.sup
	ctx, cancel := withTimeout(g.ctx, s.clk, s.cfg.ConnectTimeout)
	defer cancel()
	ctx = context.WithValue(ctx, connectByKey{}, s.clk.Now().Add(s.cfg.ConnectTimeout))
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

// attach runs set under the generation's lock unless shutdown started.
func (g *generation) attach(set func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closingLocked() {
		return false
	}
	set()
	return true
}

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

// reportsEnd reports whether g's transport tells of the session's end
// (SessionEnded): a stdio process, or the wire around any transport but
// Streamable HTTP.
func (g *generation) reportsEnd() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.transport.(transport.Owned)
	return ok || g.wire != nil
}

// SessionEnded implements transport.Sink: the process of g's transport exited,
// or its connection closed. Reports of a transport g no longer uses (the
// first process of an attempt that learnt the classic handshake) are no
// news. While the attempt runs, the end is kept for the attempt's outcome.
func (g *generation) SessionEnded(src any, exited bool) {
	g.mu.Lock()
	if src != any(g.transport) && (g.wire == nil || src != any(g.wire)) {
		g.mu.Unlock()
		return
	}
	if g.lifeState() == genConnecting {
		if !g.life.early {
			g.life.early, g.life.earlyExited = true, exited
		}
		g.mu.Unlock()
		return
	}
	g.mu.Unlock()
	g.ended(exited, exited)
}

// ended is the end of g's session as went-bad. An exit is reported by the
// goroutine that reaps the process, which blocks on nothing: the
// generation closes there (own), and its release reports the loss from
// there too, once the process is reaped. The SDK retires pending calls
// once it reads the rest of the pipe (a dead server's last replies are
// delivered), so the calls are not cancelled (natural). A closed
// connection is waited out off the caller (the SDK's reader) for the
// session's error.
func (g *generation) ended(exited, own bool) {
	s := g.sup
	if exited {
		g.fire(genWentBad, genPayload{at: s.clk.Now(), err: errServerExited, natural: true, own: own})
		return
	}
	// Counted as a worker under the lock, only while up: disposal, which
	// waits for the workers, first moves every generation past up under
	// the same lock, so no worker is added once it waits.
	g.mu.Lock()
	if g.lifeState() != genUp {
		g.mu.Unlock()
		return // already going: a shutdown closed the connection
	}
	s.workers.Add(1)
	g.mu.Unlock()
	go func() {
		defer s.workers.Done()
		err := g.sess.Wait()
		g.fire(genWentBad, genPayload{at: s.clk.Now(), err: err, natural: true})
	}()
}

// ProcessGone implements transport.Sink: the release, when g is shutting down;
// earlier, no news (shutdownWork finds the process gone).
func (g *generation) ProcessGone(src any) {
	g.mu.Lock()
	mine := src == any(g.transport)
	g.mu.Unlock()
	if mine {
		g.fire(genRelease, genPayload{own: true})
	}
}

// markBad reports the first bad news about an established connection;
// later news, and news about a generation not up, changes nothing.
func (g *generation) markBad(at time.Time, err error) {
	g.fire(genWentBad, genPayload{at: at, err: err})
}

// ProcessLogger implements transport.Sink.
func (g *generation) ProcessLogger() *slog.Logger {
	return g.sup.cfg.Logger.With("server", g.sup.cfg.Name, "generation", g.id)
}

// requestFailed is the cause to report for a request that failed because
// the connection is gone. A transport without a process has no other way
// to tell the supervisor (a refused or reset HTTP connection does not end
// the SDK's session), so the failure ends the generation: a loss. A
// process's pipes end the session by themselves.
func (g *generation) requestFailed(err error) error {
	// A session that ended by itself (a process's exit, the session's
	// own error) is no better cause than the request's own error (EOF),
	// with which the SDK retired it; which of the two came first is chance.
	if cause := g.badCause(); cause != nil && !g.endedNaturally() {
		return cause
	}
	if !transport.ConnectionGone(err) && !g.needsSignIn(err) {
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

// endedNaturally reports whether g went bad because its session ended by
// itself.
func (g *generation) endedNaturally() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.life.natural
}

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
// transition into up (generation.fire).
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
		_, ownsProcess := g.transport.(Terminator)
		g.mu.Unlock()
		if ownsProcess && transport.ConnectionGone(err) {
			// The process's pipes closed under the probe: its exit
			// reports the loss (requestFailed), not this probe, which
			// would race it to name the cause and date the loss.
			return
		}
		// Nothing since the last answer shows the connection was good:
		// not even that this probe was sent on time, on a loaded host.
		g.markBad(g.lastGood(), fmt.Errorf("keep-alive %s got no answer within KeepAlive (%v): %w", g.probeName(), s.cfg.KeepAlive, causeOf(ctx, err)))
		return
	}
	g.markGood(s.clk.Now())
	g.ka.timer.Reset(s.cfg.KeepAlive)
	g.mu.Unlock()
}

// probeLive is one keep-alive probe of an established generation. On the
// classic protocol it is a ping. Protocol 2026-07-28 has no ping and no
// session, so there it is a server/discover request, the cheapest request
// the protocol has, sent beside the SDK: through the wired connection on
// stdio and in-process transports (its answer never reaches the SDK), and
// as a request of its own to the endpoint on Streamable HTTP. Any answer,
// a JSON-RPC error included, proves that the server reads and answers; no
// answer within the interval, a connection refused or reset, or an HTTP
// 5xx is a failed probe, which ends the generation (ping).
func (g *generation) probeLive(ctx context.Context) error {
	var err error
	switch {
	case !newProtocol(g.protocol):
		err = g.sess.Ping(ctx, nil)
	case g.wireConn() != nil:
		err = g.wireConn().Probe(ctx, transport.MethodDiscover, g.discoverParams())
	default:
		st := transport.StreamableOf(g.transport)
		if st == nil {
			return g.sess.Ping(ctx, nil) // no way to send a probe of our own
		}
		err = transport.DiscoverHTTP(ctx, st, g.protocol, g.discoverParams())
	}
	if transport.Answered(err) {
		return nil // answered, if only to refuse
	}
	return err
}

// probeName names the keep-alive probe in errors.
func (g *generation) probeName() string {
	if newProtocol(g.protocol) {
		return transport.MethodDiscover
	}
	return "ping"
}

func (g *generation) discoverParams() map[string]any {
	impl := defaultImplementation()
	if g.sup.cfg.Implementation != nil {
		impl = *g.sup.cfg.Implementation
	}
	return map[string]any{"_meta": map[string]any{
		mcp.MetaKeyProtocolVersion:    g.protocol,
		mcp.MetaKeyClientInfo:         &impl,
		mcp.MetaKeyClientCapabilities: map[string]any{},
	}}
}

// withCause adds what the server did to a generation's error (err may be
// nil: a session that ended without an error).
func (g *generation) withCause(err error) error {
	g.mu.Lock()
	t, attempt := g.transport, g.life.cause == causeFailed
	g.mu.Unlock()
	cause := transportCause(t)
	// Only a session the server's exit ended: an attempt the supervisor
	// gave up on (ConnectTimeout, an invalid tool list) closed the
	// server's stdin itself, and its own error says why.
	if x, ok := cause.(*ServerExit); ok && attempt && x.Signal == "" && x.Limit == "" && transport.ConnectionGone(err) {
		x.BeforeAnswering = true
	}
	switch {
	case cause == nil:
		return err
	case err == nil:
		return cause
	}
	return &causedError{err: err, cause: cause}
}
