//lint:file-ignore SA1019 roots and logging are deprecated upstream (SEP-2577) but still relayed.

package front

import (
	"context"
	"sync"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/front/internal/bridge"
	"github.com/mcpfsm/mcpfsm/front/internal/instance"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// clientKind says what one client of the front is.
type clientKind int

const (
	// stdioClient is the stdio front's one client: every shared instance
	// serves it as its own, with its roots and logging level.
	stdioClient clientKind = iota
	// sessionClient is one 2025-11-25 session over HTTP.
	sessionClient
	// subjectClient is the 2026-07-28 requests of one subject over HTTP:
	// that era has no sessions, so what identifies the caller keys its
	// instances.
	subjectClient
)

// client is one client of the front, served apart from the others: its
// own MCP server (so its own tool list and notifications), its calls in
// flight, roots, logging level, subscriptions, bridged calls and
// per-client instances. Nothing of one client's reaches another. The
// concerns with state of their own are types the client makes at its
// start and holds (calls, roots, levels, subscriptions, bridges), each
// under a lock of its own; mu guards the fields that follow it.
type client struct {
	f       *Front
	id      uint64 // names it in the logs of its instances (logAttrs)
	kind    clientKind
	subject string       // the caller's subject; "" without credentials
	caller  authz.Caller // whom its lists are for: the caller that opened it
	server  *mcp.Server
	view    view
	search  searchState // its searchable tools, in search mode

	// reg and cat receive the tools and catalog of the client's own
	// instances.
	reg *conn.ToolRegistry
	cat *conn.Catalog

	ctx  context.Context // ends when the client does
	stop context.CancelFunc
	wg   sync.WaitGroup // the client's goroutines: its sync loop, roots reads

	release func()         // frees the client's session slot, once
	calls   *calls         // its requests in flight, by server
	roots   *roots         // its roots, as it last gave them
	levels  *levels        // its logging level
	subs    *subscriptions // its resource subscriptions
	bridges *bridges       // its bridged calls, by requestState

	mu        sync.Mutex // released before an instance's method is called (see instanceSet)
	closed    bool
	ss        *mcp.ServerSession // its session, once known (stdio and 2025-11-25)
	instances map[string]*instance.Instance
	syncing   bool         // the sync loop of the client's own registry runs
	busy      int          // requests in progress (a 2026-07-28 client's)
	idle      *clock.Timer // ends a 2026-07-28 client left idle
	idleSeq   uint64       // which arming of idle is current
}

// background runs fn on a goroutine of c's, which close waits for, unless c
// is closed; it reports whether it did.
func (c *client) background(fn func()) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	c.wg.Add(1) // under mu: close waits only after closed is set
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		fn()
	}()
	return true
}

// session is c's session, if it has one yet.
func (c *client) session() *mcp.ServerSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ss
}

// adopt records ss as c's session.
func (c *client) adopt(ss *mcp.ServerSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ss == nil && ss != nil && c.kind != subjectClient {
		c.ss = ss
	}
}

// begin records a request of c in flight on server, made under ctx in
// ss, and adopts ss as c's session; the returned function ends it.
func (c *client) begin(ctx context.Context, ss *mcp.ServerSession, server string, b *bridge.Call) (*inflight, func()) {
	c.adopt(ss)
	return c.calls.begin(ctx, ss, server, b)
}
