package front

import (
	"context"
	"fmt"
	"sync"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/front/internal/instance"
)

// A shared server keeps one instance per era its clients speak. Its
// shared instance (the host's supervisor, set up by [Front.Configure])
// speaks the classic era, unless the server's configuration pins a
// protocol version: a server written for that era sends its requests
// during a call, which a 2026-07-28 session refuses. The 2026-07-28
// clients' requests go to a second shared instance, of their era
// (conn's default protocol version), started by Backends.StartInstance
// on the first such request and shared by every such client: there the
// server's input requests come back in the call's result under its own
// keys, every request of a round at once, and its rounds' requestState
// is its own, as they would to that client alone. It is supervised like
// any instance, closed after Options.InstanceIdle without a request
// (the next request starts it again), by a reload (the host's), and by
// [Front.Close]. Once it has listed, its 2026-07-28 clients are served
// its listing (a call that changes the server's tools changes theirs,
// with the list_changed notification), the shared instance's before and
// after. Its logs say "instance=shared era=2026-07-28"; the host counts
// it among the server's instances.

// eraInstances are the shared servers' instances for 2026-07-28 clients.
type eraInstances struct {
	mu     sync.Mutex
	closed bool
	done   chan struct{}           // closed by closeEras: the instances' watchers end
	wanted map[string]bool         // shared servers whose shared instance speaks the classic era by default
	by     map[string]*eraInstance // their 2026-07-28 instance, made on first use
}

// eraInstance is a shared server's instance for 2026-07-28 clients: it
// publishes its tools and catalog apart from the shared instance's
// (every client lists those; a call looks the tool up here).
type eraInstance struct {
	in     *instance.Instance
	reg    *conn.ToolRegistry
	cat    *conn.Catalog
	listed chan struct{} // a value when it starts or stops listing
}

// eraLabel names the era of a shared server's second instance in logs.
const eraLabel = conn.StatelessProtocolVersion

// wantEra records whether server's shared instance speaks the classic
// era because the front chose it (Configure), not its configuration:
// its 2026-07-28 clients then get an instance of their own era.
func (e *eraInstances) want(server string, yes bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.wanted == nil {
		e.wanted = map[string]bool{}
	}
	e.wanted[server] = yes
}

// eraInstance is shared server's instance for 2026-07-28 clients, made
// absent on first use, or nil when the server has none: its
// configuration pins a protocol version, the front did not configure
// its shared instance, or the front closed.
func (f *Front) eraInstance(server string) *eraInstance {
	e := &f.eras
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || !e.wanted[server] || f.opts.Backends == nil {
		return nil
	}
	if ei := e.by[server]; ei != nil {
		return ei
	}
	ei := &eraInstance{reg: conn.NewRegistry(), listed: make(chan struct{}, 1)}
	if f.opts.Catalog != nil {
		ei.cat = conn.NewCatalog()
	}
	logger := f.opts.Logger.With("instance", "shared", "era", eraLabel)
	in, err := instance.New(instance.Options{Server: server, Clock: f.opts.Clock, Idle: f.opts.InstanceIdle, Logger: logger,
		Start: func(ctx context.Context, observe func(conn.Transition)) (*conn.Supervisor, func(), error) {
			sup, err := f.opts.Backends.StartInstance(ctx, server, func(cfg *conn.Config) { f.configureEra(server, cfg, ei, observe) })
			if err != nil {
				return nil, nil, fmt.Errorf("mcp server %q: its shared instance for 2026-07-28 clients did not start: %w", server, err)
			}
			return sup, func() {}, nil
		},
		// Its clients are served its listing once it has listed, and the
		// shared instance's again once it closed.
		Established: func(bool) { ei.relist() },
		Dropped:     ei.relist,
		Go:          f.wg.Go,
		Kind:        "shared instance for 2026-07-28 clients",
		EndReason:   "mcpfsm is closing",
	})
	if err != nil {
		f.opts.Logger.Warn("no 2026-07-28 instance of a shared server: "+err.Error(), "server", server)
		return nil
	}
	ei.in = in
	if e.by == nil {
		e.by = map[string]*eraInstance{}
	}
	if e.done == nil {
		e.done = make(chan struct{})
	}
	e.by[server] = ei
	done := e.done
	f.wg.Go(func() { f.watchEra(ei, done) })
	return ei
}

// relist tells the watcher of ei that its clients' listing changes.
func (ei *eraInstance) relist() {
	select {
	case ei.listed <- struct{}{}:
	default:
	}
}

// watchEra updates the 2026-07-28 clients' listings at every change of
// ei's until done is closed.
func (f *Front) watchEra(ei *eraInstance, done <-chan struct{}) {
	for {
		changed := ei.reg.Changed() // before reading: no change is missed
		var catChanged <-chan struct{}
		if ei.cat != nil {
			catChanged = ei.cat.Changed()
		}
		for _, c := range f.all() {
			if c.kind == subjectClient {
				c.update()
			}
		}
		select {
		case <-done:
			return
		case <-changed:
		case <-catChanged:
		case <-ei.listed:
		}
	}
}

// listingEras are the shared servers' 2026-07-28 instances that have
// listed since they started, by server.
func (f *Front) listingEras() map[string]*eraInstance {
	e := &f.eras
	e.mu.Lock()
	all := make(map[string]*eraInstance, len(e.by))
	for name, ei := range e.by {
		all[name] = ei
	}
	e.mu.Unlock()
	for name, ei := range all {
		if !ei.in.Listing() {
			delete(all, name)
		}
	}
	return all
}

// configureEra sets what of a shared server's 2026-07-28 instance's
// conn.Config is the front's: the shared instance's client options and
// middleware (a request of the server goes to the client whose call it
// is), its own registry and catalog, its logger labelled, and conn's
// default protocol version (the server's configuration pins none). Its
// roots are those the configuration declares, as the shared instance's.
func (f *Front) configureEra(server string, cfg *conn.Config, ei *eraInstance, observe func(conn.Transition)) {
	cfg.Logger = f.opts.Logger.With("instance", "shared", "era", eraLabel)
	cfg.Registry, cfg.Catalog = ei.reg, ei.cat
	cfg.Client, cfg.ClientMiddleware = f.ClientOptionsFor(server), f.ClientMiddlewareFor(server)
	cfg.FailOnStartupError = false // Start must not wait: the request does, by its own deadline
	if sup, ok := f.opts.Backends.Supervisor(server); ok {
		cfg.Roots = sup.Roots() // the configured roots, as the shared instance has them
	}
	if f.opts.Tracer != nil {
		cfg.Propagate = f.opts.Tracer.Propagate
	}
	next := cfg.OnTransition
	cfg.OnTransition = func(t conn.Transition) {
		if next != nil {
			next(t)
		}
		observe(t)
		f.Observe(t)
	}
}

// closeEras ends every 2026-07-28 instance of the shared servers (their
// closes run on f.wg) and starts no more.
func (f *Front) closeEras() {
	e := &f.eras
	e.mu.Lock()
	e.closed = true
	all := e.by
	e.by = nil
	if e.done != nil {
		close(e.done)
		e.done = nil
	}
	e.mu.Unlock()
	for _, ei := range all {
		ei.in.End()
	}
}

// eraBackend is where a 2026-07-28 client's request to shared server
// goes: the server's instance of that era, started and waited for (by
// ctx) on first use. During an outage of the shared instance a first
// use is answered at once from its state, as any call during an outage.
func (c *client) eraBackend(ctx context.Context, server string, ei *eraInstance) (backend, error) {
	f := c.f
	if ei.in.Running() == nil {
		shared := backend{server: server, subject: c.subject, tools: f.opts.Registry, cat: f.opts.Catalog, done: func() {}, f: f}
		if st, ok := shared.status(); ok && st.State != conn.Established && st.State != conn.Connecting {
			return shared, errServerDown
		}
	}
	sup, _, done, err := ei.in.Use(ctx)
	if err != nil {
		return backend{}, err
	}
	_ = sup.Ready(ctx)
	return backend{server: server, subject: c.subject, sup: sup, tools: ei.reg, cat: ei.cat, done: done, f: f}, nil
}
