// How the front and each of its clients start and end: New, Run, Sync,
// Update, Configure and Close for the front; newClient, initialized,
// watchOwn, close and drop for a client. They call into every concern,
// and no other file calls back into them but the entry points.

package front

import (
	"context"
	"log/slog"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/front/internal/instance"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// New returns a Front over o.Registry. It serves no tools until the first
// [Front.Sync] or [Front.Run].
func New(o Options) *Front {
	if o.Clock == nil {
		o.Clock = clock.New()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Implementation == nil {
		o.Implementation = &mcp.Implementation{Name: "mcpfsm", Version: ModuleVersion()}
	}
	if o.InstanceIdle == 0 {
		o.InstanceIdle = DefaultInstanceIdle
	}
	if o.Redact == nil {
		o.Redact = func(s string) string { return s }
	}
	return &Front{opts: o, audit: auditor{log: o.Audit, clock: o.Clock}, results: &results{lim: o.Limits, clock: o.Clock},
		clients: map[*client]struct{}{}, subjects: map[string]*client{}, warned: map[string]bool{}}
}

// Run serves one client over t (such as &mcp.StdioTransport{}) until the
// client disconnects or ctx is done, mirroring the registry meanwhile.
// That client is the only one: every server's shared instance serves
// it, with its roots and logging level.
func (f *Front) Run(ctx context.Context, t mcp.Transport) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := f.newClient(stdioClient, authz.Caller{Operator: true})
	f.add(c)
	f.mu.Lock()
	f.shared = c
	f.mu.Unlock()
	f.Update()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Sync(ctx)
	}()
	defer func() {
		cancel()
		<-done
		f.drop(c)
		f.mu.Lock()
		f.shared = nil
		f.mu.Unlock()
		f.wait()
	}()
	return c.server.Run(ctx, t)
}

// Sync mirrors the registry (and the catalog) into every client's server
// until ctx is done: at once, then at every change of either.
func (f *Front) Sync(ctx context.Context) {
	for {
		changed := f.opts.Registry.Changed() // before reading: no change is missed
		var catChanged <-chan struct{}
		if f.opts.Catalog != nil {
			catChanged = f.opts.Catalog.Changed()
		}
		f.Update()
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-catChanged:
		}
	}
}

// Update brings every client's tools, resources, resource templates and
// prompts in line with the registry, the catalog and the client's own
// instances once. Sync and Run call it at every change; a host that
// serves the front another way calls it before it accepts clients.
func (f *Front) Update() {
	for _, c := range f.all() {
		c.update()
	}
}

// Close ends every client served now and closes their instances,
// waiting for them at most until ctx ends. A host calls it once it
// stopped accepting requests, before it closes the shared instances.
func (f *Front) Close(ctx context.Context) error {
	for _, c := range f.all() {
		f.drop(c)
	}
	f.closeTasks()
	f.closeEras()
	done := make(chan struct{})
	go func() { f.wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Configure sets what of a shared instance's conn.Config the front
// serves it with: the classic era when the configuration pins no
// protocol version, unless the server refuses it (conn.Config's
// PreferClassic; 2026-07-28 clients then get a shared instance of their
// own era, started on their first request), its client options
// and receiving middleware (the
// server's requests and notifications reach the client they belong to),
// its transitions observed ([Front.Observe]), and, on the stdio front,
// its one client's roots once they are known (over HTTP a shared
// instance keeps the roots its configuration declares). Pass it as
// host.Options.Configure.
func (f *Front) Configure(server string, c *conn.Config) {
	c.Client, c.ClientMiddleware = f.ClientOptionsFor(server), f.ClientMiddlewareFor(server)
	// A shared instance speaks the classic era unless the server's
	// configuration pins one: a server written for that era sends its
	// requests during a call, which a 2026-07-28 session would refuse.
	// The 2026-07-28 clients then get a shared instance of their own era
	// (erainstance.go); with a pinned version, this one serves both (the
	// era bridge turns a classic server's requests into input requests).
	// A server that refuses the classic handshake (one of 2026-07-28
	// only) gets the stateless protocol all the same (conn learns it
	// within the attempt), and this instance then serves both too.
	f.eras.want(server, c.ProtocolVersion == "")
	if c.ProtocolVersion == "" {
		c.PreferClassic = true
	}
	if f.opts.Tracer != nil {
		c.Propagate = f.opts.Tracer.Propagate
	}
	f.mu.Lock()
	owner := f.shared
	f.mu.Unlock()
	if owner != nil {
		if roots, ok := owner.roots.known(); ok {
			c.Roots = roots
		}
	}
	c.OnTransition = thenObserve(c.OnTransition, f.Observe)
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
