package conn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// calls tracks a generation's in-flight tool calls, so that every call is
// bounded by CallTimeout and retired when the generation is shut down,
// without a timer and a context.AfterFunc per call: the calls sit in a
// list in start order, which is also deadline order (every call gets the
// same CallTimeout), and one timer per generation watches the head.
type calls struct {
	mu     sync.Mutex
	head   *inflight
	tail   *inflight
	timer  *clock.Timer // armed while the list is not empty
	closed bool         // the generation shut down: no new calls
}

// inflight is one call in the list.
type inflight struct {
	expired    atomic.Bool // cancelled by CallTimeout
	cancel     context.CancelFunc
	deadline   time.Time
	prev, next *inflight
}

// start registers a call and returns its context, derived from ctx, and
// its entry, which the caller passes to end. ok is false when the
// generation is shutting down.
func (c *calls) start(ctx context.Context, clk clock.Clock, timeout time.Duration) (_ context.Context, _ *inflight, ok bool) {
	ctx, cancel := context.WithCancel(ctx)
	n := &inflight{cancel: cancel, deadline: clk.Now().Add(timeout)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		cancel()
		return nil, nil, false
	}
	if c.tail == nil {
		c.head, c.tail = n, n
		if c.timer == nil {
			c.timer = clk.AfterFunc(timeout, func() { c.expire(clk) })
		} else {
			c.timer.Reset(timeout)
		}
	} else {
		n.prev, c.tail.next, c.tail = c.tail, n, n
	}
	c.mu.Unlock()
	return ctx, n, true
}

// end removes a finished call. A timer armed for it fires later and
// re-arms for the new head, which is cheaper than re-arming on every end.
func (c *calls) end(n *inflight) {
	c.mu.Lock()
	c.unlink(n)
	c.mu.Unlock()
	n.cancel()
}

func (c *calls) unlink(n *inflight) {
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
	var expired []*inflight
	for c.head != nil && !c.head.deadline.After(now) {
		n := c.head
		c.unlink(n)
		n.expired.Store(true)
		expired = append(expired, n)
	}
	if c.head != nil && !c.closed {
		c.timer.Reset(c.head.deadline.Sub(now))
	}
	c.mu.Unlock()
	for _, n := range expired {
		n.cancel()
	}
}

// close refuses new calls and stops the timer. With cancel it also
// retires every in-flight call; without, the calls stay until they end by
// themselves (the session ended and the SDK retires them), since cancelling
// would race a reply that did arrive.
func (c *calls) close(cancel bool) {
	c.mu.Lock()
	c.closed = true
	var all []*inflight
	for cancel && c.head != nil {
		n := c.head
		c.unlink(n)
		all = append(all, n)
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	c.mu.Unlock()
	for _, n := range all {
		n.cancel()
	}
}

// call is Tool.Call on this generation.
func (g *generation) call(ctx context.Context, public, raw string, args any) (*mcp.CallToolResult, error) {
	if g.down.Load() {
		return nil, g.unavailable(public, nil)
	}
	// CallTimeout bounds the call, and shutting the generation down
	// retires it at once.
	ctx, n, ok := g.calls.start(ctx, g.sup.clk, g.sup.cfg.CallTimeout)
	if !ok {
		return nil, g.unavailable(public, nil)
	}
	defer g.calls.end(n)
	res, err := g.sess.CallTool(ctx, &mcp.CallToolParams{Name: raw, Arguments: args})
	if err != nil && n.expired.Load() {
		return nil, fmt.Errorf("mcp server %q: tool %q did not answer within CallTimeout (%v): %w",
			g.sup.cfg.Name, public, g.sup.cfg.CallTimeout, context.DeadlineExceeded)
	}
	if err != nil && (g.down.Load() || connectionGone(err)) {
		return nil, g.unavailable(public, g.requestFailed(err))
	}
	return res, err
}

// connectionGone reports errors that mean the server went away under the
// call rather than answered it.
func connectionGone(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, mcp.ErrSessionMissing) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED)
}

func (g *generation) unavailable(tool string, cause error) error {
	return &unavailableError{server: g.sup.cfg.Name, tool: tool, state: g.sup.State(), cause: cause}
}
