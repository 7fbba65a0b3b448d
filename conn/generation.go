package conn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn/internal/transport"
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

	changed atomic.Bool // a list_changed arrived and is not yet handled
	calls   calls       // in-flight tool calls

	// mu guards what follows and the generation machine's transitions
	// (genlife.go): the state decides what may still be attached.
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
	resyncFails int                                          // failed re-syncs in a row (resync.go)

	resyncTimer *clock.Timer // the retry of a failed re-sync; guarded by mu

	ext genSession // the session beyond its tools (session.go)
}

func (s *Supervisor) newGeneration(attempt int) *generation {
	s.genSeq++
	ctx, cancel := context.WithCancel(context.Background())
	g := &generation{id: s.genSeq, attempt: attempt, sup: s, ctx: ctx, cancel: cancel,
		released: make(chan struct{}), expired: make(chan struct{})}
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
	if g.closingLocked() {
		return false
	}
	set()
	return true
}
