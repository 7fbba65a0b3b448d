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

// newClient makes a client, serving what the registry lists now; add
// makes it one of the front's.
func (f *Front) newClient(kind clientKind, caller authz.Caller) *client {
	c := &client{f: f, id: clientIDs.Add(1), kind: kind, subject: caller.Subject, caller: caller, reg: conn.NewRegistry(), release: func() {},
		calls: newCalls(), subs: &subscriptions{}, instances: map[string]*instance.Instance{}}
	if f.opts.Catalog != nil {
		c.cat = conn.NewCatalog()
	}
	c.bridges = newBridges(c, f.opts.Clock, f.opts.Logger, kind == subjectClient,
		func(server string) bool { return !c.isolated(server) }, c.calls.drop)
	c.ctx, c.stop = context.WithCancel(context.Background())
	c.levels = &levels{apply: c.applyLevel}
	c.roots = &roots{logger: f.opts.Logger, ctx: c.ctx, spawn: c.background, forward: c.forwardRoots}
	c.server = f.newServer(c)
	c.view.init()
	c.update()
	return c
}

// initialized takes note of c's session, reads its roots, asks it to
// open the sign-ins under way and starts its caller instances
// (startCallerInstances), which ask it to sign in where it must.
func (c *client) initialized(_ context.Context, req *mcp.InitializedRequest) {
	c.adopt(req.Session)
	c.roots.fetch(req.Session)
	c.askSignIns()
	if len(c.callerServers()) > 0 {
		c.background(func() { c.startCallerInstances(c.ctx) })
	}
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

// isolated reports whether c has (or gets) an instance of its own of
// server: over HTTP, unless the server is shared and its credential is
// not c's own (Options.CallerSignIn).
func (c *client) isolated(server string) bool {
	return c.kind != stdioClient && c.f.opts.Backends != nil && (!c.f.isolation(server).shared || c.callerSignIn(server) != nil)
}

// close ends c: its bridged calls are lost, its instances close (off
// the caller's goroutine; the front waits for them), its slot is freed.
// It may be called more than once.
func (c *client) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	instances := c.instanceSet()
	ss := c.ss
	c.idleSeq++
	if c.idle != nil {
		c.idle.Stop()
		c.idle = nil
	}
	c.mu.Unlock()
	if ss != nil && c.kind == sessionClient {
		_ = ss.Close() // the front ends it: its client hears of it
	}
	c.bridges.Close()
	for _, t := range c.subs.take() {
		if !c.isolated(t.server) {
			c.f.unsubscribeShared(t)
		}
	}
	for _, in := range instances {
		in.End()
	}
	c.search.close()
	c.f.results.forget(c.id)
	c.forgetTasks()
	c.stop()
	c.release()
	c.f.wg.Go(func() { c.bridges.Wait(); c.wg.Wait() })
}

// drop ends c and forgets it.
func (f *Front) drop(c *client) {
	f.mu.Lock()
	delete(f.clients, c)
	if f.subjects[c.subject] == c {
		delete(f.subjects, c.subject)
	}
	f.mu.Unlock()
	c.close()
}

// watchOwn starts c's sync loop over its own registry and catalog, once:
// its instances' listings change its view.
func (c *client) watchOwn() {
	c.mu.Lock()
	if c.syncing || c.closed {
		c.mu.Unlock()
		return
	}
	c.syncing = true
	c.wg.Add(1) // under mu: close waits only after closed is set
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		for {
			changed := c.reg.Changed() // before reading: no change is missed
			var catChanged <-chan struct{}
			if c.cat != nil {
				catChanged = c.cat.Changed()
			}
			c.update()
			select {
			case <-c.ctx.Done():
				return
			case <-changed:
			case <-catChanged:
			}
		}
	}()
}
