package conn

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn/internal/bugs"
	"github.com/mcpfsm/mcpfsm/conn/internal/transport"
	"github.com/mcpfsm/mcpfsm/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// calls tracks a generation's in-flight tool calls, so that every call is
// bounded by CallTimeout and retired when the generation is shut down,
// without a timer and a context.AfterFunc per call: the calls sit in a
// list in start order, which is also deadline order (every call gets the
// same CallTimeout), and one timer per generation watches the head. Each
// call's context is its own node in the list (see callCtx).
//
// The timer is not touched per call either: once armed it is left to fire
// (a call's deadline is never earlier than the time it was armed for,
// since every call gets the same timeout), and when it fires it re-arms
// for the head, if any. A runtime timer set and stopped for every call
// costs about 2 % of an in-memory call's latency; this costs nothing.
type calls struct {
	mu      sync.Mutex
	head    *callCtx
	tail    *callCtx
	timer   *clock.Timer // armed when timerAt is set
	timerAt time.Time    // when the armed timer fires; zero: not armed
	closed  bool         // the generation shut down: no new calls

	freeMu sync.Mutex      // guards free; taken after a callCtx's mu, never before
	free   []chan struct{} // open Done channels of calls that ended uncancelled
}

// maxFree bounds the free list: about as many channels as calls run at
// once, beyond which a channel is left to the garbage collector.
const maxFree = 64

func (c *calls) getChan() chan struct{} {
	c.freeMu.Lock()
	defer c.freeMu.Unlock()
	if n := len(c.free); n > 0 {
		ch := c.free[n-1]
		c.free = c.free[:n-1]
		return ch
	}
	return make(chan struct{})
}

func (c *calls) putChan(ch chan struct{}) {
	c.freeMu.Lock()
	defer c.freeMu.Unlock()
	if len(c.free) < maxFree {
		c.free = append(c.free, ch)
	}
}

// start registers a call and returns its context, derived from ctx, which
// the caller passes to end. ok is false when the generation is shutting
// down. The call's deadline is timeout after since, or after now when
// since is zero; a call with an earlier since (it waited for a slot) may
// end before calls started earlier, and is put in its place.
func (c *calls) start(ctx context.Context, clk clock.Clock, timeout time.Duration, since time.Time) (_ *callCtx, ok bool) {
	now := clk.Now()
	if since.IsZero() {
		since = now
	}
	n := &callCtx{parent: ctx, calls: c, deadline: since.Add(timeout)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, false
	}
	c.insert(n)
	wait := n.deadline.Sub(now)
	switch {
	case c.timer == nil:
		c.timer = clk.AfterFunc(wait, func() { c.expire(clk) })
		c.timerAt = n.deadline
	case c.timerAt.IsZero() || c.timerAt.After(n.deadline):
		c.timer.Reset(wait)
		c.timerAt = n.deadline
	}
	c.mu.Unlock()
	return n, true
}

// insert puts n in the list in deadline order: at the tail, unless it
// waited for a slot and ends before calls started earlier.
func (c *calls) insert(n *callCtx) {
	at := c.tail
	for at != nil && at.deadline.After(n.deadline) {
		at = at.prev
	}
	switch {
	case at == nil && c.head == nil:
		c.head, c.tail = n, n
	case at == nil:
		n.next, c.head.prev, c.head = c.head, n, n
	case at == c.tail:
		n.prev, c.tail.next, c.tail = c.tail, n, n
	default:
		n.prev, n.next = at, at.next
		at.next.prev, at.next = n, n
	}
}

// end removes a finished call. The timer is left as it is: when it fires
// it re-arms for the new head, which is cheaper than re-arming on every
// end.
func (c *calls) end(n *callCtx) {
	c.mu.Lock()
	c.unlink(n)
	c.mu.Unlock()
	n.finish()
}

func (c *calls) unlink(n *callCtx) {
	if n.prev == nil && c.head != n {
		return // already removed
	}
	if n.prev != nil {
		n.prev.next = n.next
	} else {
		c.head = n.next
	}
	if n.next != nil {
		n.next.prev = n.prev
	} else {
		c.tail = n.prev
	}
	n.prev, n.next = nil, nil
}

// expire cancels the calls past their deadline and re-arms the timer for
// the next one.
func (c *calls) expire(clk clock.Clock) {
	now := clk.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timerAt = time.Time{}
	for c.head != nil && !c.head.deadline.After(now) {
		n := c.head
		c.unlink(n)
		n.cancel(byTimeout, context.DeadlineExceeded)
	}
	if c.head != nil && !c.closed {
		c.timer.Reset(c.head.deadline.Sub(now))
		c.timerAt = c.head.deadline
	}
}

// close refuses new calls and stops the timer. With cancel it also
// retires every in-flight call; without, the calls stay until they end by
// themselves (the session ended and the SDK retires them), since cancelling
// would race a reply that did arrive.
func (c *calls) close(cancel bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for cancel && c.head != nil {
		n := c.head
		c.unlink(n)
		n.cancel(byShutdown, context.Canceled)
	}
	if c.timer != nil {
		c.timer.Stop()
		c.timerAt = time.Time{}
	}
}

// expired reports whether CallTimeout cancelled the call.
func (x *callCtx) expired() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.reason == byTimeout
}

// call is Tool.Call on this generation; since is when the call started,
// if it waited for a slot first (zero: now).
func (g *generation) call(ctx context.Context, since time.Time, public, raw string, args any) (*mcp.CallToolResult, error) {
	var res *mcp.CallToolResult
	err := g.request(ctx, public, since, func(ctx context.Context) (err error) {
		res, err = g.sess.CallTool(ctx, &mcp.CallToolParams{Meta: callMeta(ctx), Name: raw, Arguments: args})
		return err
	})
	// The caller may be a remote MCP client: the SDK's errors quote the
	// endpoint's URL.
	return res, redact.Error(err)
}

// request runs do on g's session as one request of a caller, the single
// path of tool calls and WithSession: bounded by CallTimeout, retired at
// once when g shuts down, and failing with the one unavailable error
// (matching ErrUnavailable) when g is down or goes away under it. tool is
// the public name of the tool called, "" for another request. since is
// when the request started, if earlier than now (a call that waited for a
// slot of MaxConcurrentCalls): CallTimeout counts from there.
func (g *generation) request(ctx context.Context, tool string, since time.Time, do func(context.Context) error) error {
	if g.down() {
		return g.unavailable(tool, nil)
	}
	n, ok := g.calls.start(ctx, g.sup.clk, g.sup.cfg.CallTimeout, since)
	if !ok {
		return g.unavailable(tool, nil)
	}
	defer g.calls.end(n)
	var ctxDo context.Context = n
	if bugs.CallIgnoresDeadline {
		ctxDo = context.WithoutCancel(n)
	}
	err := do(ctxDo)
	if err != nil && n.expired() {
		what := "the request"
		if tool != "" {
			what = fmt.Sprintf("tool %q", tool)
		}
		return fmt.Errorf("mcp server %q: %s did not answer within CallTimeout (%v): %w: %w",
			g.sup.cfg.Name, what, g.sup.cfg.CallTimeout, context.DeadlineExceeded, err)
	}
	if err != nil && (g.down() || transport.ConnectionGone(err)) {
		return g.unavailable(tool, g.requestFailed(err))
	}
	return err
}

func (g *generation) unavailable(tool string, cause error) error {
	return &unavailableError{server: g.sup.cfg.Name, tool: tool, state: g.sup.State(), cause: redact.Error(cause)}
}
