package front

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/front/internal/instance"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server isolated per client gets, for each client of the HTTP front,
// an instance of its own (package front/internal/instance): a
// supervisor started on the client's first request to the server (an
// OAuth caller's instance of a server it signs in to as itself sooner:
// see startCallerInstances) and closed when the client ends or after
// Options.InstanceIdle without a request.

// instanceOf is c's instance of server, made absent on first use.
func (c *client) instanceOf(server string) (*instance.Instance, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, instance.ErrEnded
	}
	in := c.instances[server]
	if in == nil {
		f := c.f
		var err error
		mk := func() (*instance.Instance, error) {
			return instance.New(instance.Options{Server: server, Clock: f.opts.Clock, Idle: f.opts.InstanceIdle, Logger: f.opts.Logger.With(c.logAttrs()...),
				Start: func(ctx context.Context, observe func(conn.Transition)) (*conn.Supervisor, func(), error) {
					return c.startInstance(ctx, server, observe)
				},
				Established: func(first bool) {
					c.sendLevel(server)
					if first {
						c.watchOwn()
					}
				},
				Go:      f.wg.Go,
				Dropped: c.update, // the client sees the shared listing again
			})
		}
		in, err = plantInstance(f, server, mk)
		if err != nil {
			return nil, err
		}
		c.instances[server] = in
	}
	return in, nil
}

// startInstance takes a slot of server's instances and starts c's.
func (c *client) startInstance(ctx context.Context, server string, observe func(conn.Transition)) (*conn.Supervisor, func(), error) {
	f := c.f
	release, err := f.slots.Instance(server, f.isolation(server).maxInstances)
	if err != nil {
		return nil, nil, err
	}
	sup, err := f.opts.Backends.StartInstance(ctx, server, func(cfg *conn.Config) { c.configure(server, cfg, observe) })
	if err != nil {
		release()
		return nil, nil, fmt.Errorf("mcp server %q: its instance for this client did not start: %w", server, err)
	}
	return sup, release, nil
}

// instanceSet is a copy of c's instances by server; c.mu must be held.
// An instance's methods take its own lock, which is held while it
// starts, and a start reads c's roots (configure takes roots.mu) and
// calls back into c (Established): they are called on the copy, with
// c.mu released.
func (c *client) instanceSet() map[string]*instance.Instance {
	return maps.Clone(c.instances)
}

// clientIDs numbers the clients of every front, for the logs.
var clientIDs atomic.Uint64

// logAttrs name c in the logs of its instances: its number, its kind
// and its caller's subject, if it has one (a name, never a credential).
// A line of an instance that went down (its transitions, with their
// cause, and its closes, with theirs) says whose it was.
func (c *client) logAttrs() []any {
	kinds := map[clientKind]string{stdioClient: "stdio", sessionClient: "2025-11-25 session", subjectClient: "2026-07-28 subject"}
	attrs := []any{"client", c.id, "client_kind", kinds[c.kind]}
	if c.subject != "" {
		attrs = append(attrs, "subject", c.subject)
	}
	return attrs
}

// configure sets what of c's instance of server's conn.Config is c's.
func (c *client) configure(server string, cfg *conn.Config, observe func(conn.Transition)) {
	if cfg.Logger != nil {
		cfg.Logger = cfg.Logger.With(c.logAttrs()...) // its transitions say whose it is
	}
	cfg.Registry, cfg.Catalog = c.reg, c.cat
	cfg.Client, cfg.ClientMiddleware = c.clientOptions(server), c.clientMiddleware(server)
	c.pinEra(cfg)
	if h := c.callerSignIn(server); h != nil {
		if tr, ok := cfg.Transport.(*conn.HTTP); ok {
			tr.OAuthHandler = h // the caller's own credential, never the operator's
		}
	}
	cfg.FailOnStartupError = false // Start must not wait: the request does, by its own deadline
	if tr := c.f.opts.Tracer; tr != nil {
		cfg.Propagate = tr.Propagate
	}
	if roots, ok := c.roots.known(); ok {
		cfg.Roots = roots
	}
	cfg.OnTransition = thenObserve(cfg.OnTransition, observe, func(conn.Transition) { c.f.noteMove() })
}

// callerSignIn is the OAuth handler of c's own credential to server, or
// nil when server is not signed in to per caller or c has no subject.
func (c *client) callerSignIn(server string) auth.OAuthHandler {
	if c.subject == "" || c.f.opts.CallerSignIn == nil {
		return nil
	}
	return c.f.opts.CallerSignIn(server, c.subject, c.f.callerToken(c.subject))
}

// callerServers are the servers whose credential is c's caller's own
// (Options.CallerSignIn): none for a client without a subject (the
// operator's, a static token's).
func (c *client) callerServers() []string {
	f := c.f
	if c.subject == "" || c.kind == stdioClient || f.opts.CallerSignIn == nil || f.opts.Backends == nil {
		return nil
	}
	var servers []string
	for _, sup := range f.opts.Backends.Supervisors() {
		if server := sup.Status().Server; c.callerSignIn(server) != nil {
			servers = append(servers, server)
		}
	}
	return servers
}

// startCallerInstances starts c's own instances of its callerServers
// that do not run, as a request of c's would, and returns them. No
// request waits for them: the shared instance of such a server holds no
// credential and lists nothing, so a client that only calls what it has
// listed would otherwise never start one, never be asked to sign in and
// never see the server's tools. An instance started here asks its
// caller to sign in when it must (signin.go) and lists the server's
// tools once established; it is bounded as any (Options.InstanceIdle,
// and the end of c).
func (c *client) startCallerInstances(ctx context.Context) []*conn.Supervisor {
	var sups []*conn.Supervisor
	for _, server := range c.callerServers() {
		in, err := c.instanceOf(server)
		if err != nil {
			return sups // c ended
		}
		if sup := in.Running(); sup != nil {
			sups = append(sups, sup)
			continue
		}
		sup, _, done, err := in.Use(ctx)
		if err != nil {
			c.f.opts.Logger.Debug("instance of the caller not started: "+err.Error(), append([]any{"server", server}, c.logAttrs()...)...)
			continue
		}
		done() // its idle time starts now
		sups = append(sups, sup)
	}
	return sups
}

// awaitCallerInstances starts c's caller instances (startCallerInstances)
// and waits, by ctx and at most callerListWait, for the first attempt of
// each: a 2026-07-28 client, which hears of no change, then lists what a
// caller signed in before finds at once.
func (c *client) awaitCallerInstances(ctx context.Context) {
	sups := c.startCallerInstances(c.ctx)
	if len(sups) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, callerListWait)
	defer cancel()
	for _, sup := range sups {
		_ = sup.Ready(ctx)
	}
	c.update()
}

// callerMiddleware starts, at a tools/list of c, its caller instances
// that do not run (after an idle close, say): a 2026-07-28 client, which
// has no session initialization, at its first, and waits for them (see
// awaitCallerInstances); a 2025-11-25 session, whose own started when it
// initialized, without waiting (tools/list_changed tells it).
func (c *client) callerMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/list" {
			if c.kind == subjectClient {
				c.awaitCallerInstances(ctx)
			} else if len(c.callerServers()) > 0 {
				c.background(func() { c.startCallerInstances(c.ctx) })
			}
		}
		return next(ctx, method, req)
	}
}

// callerListWait bounds how long a 2026-07-28 client's tools/list waits
// for its caller instances to come up.
const callerListWait = 10 * time.Second

// keepCallerToken keeps the access token of r, whose caller is subject,
// for the exchanges of subject's own instances (Options.CallerSignIn).
func (f *Front) keepCallerToken(subject string, r *http.Request) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if subject == "" || f.opts.CallerSignIn == nil || !ok || tok == "" {
		return
	}
	f.mu.Lock()
	if f.tokens == nil {
		f.tokens = map[string]string{}
	}
	f.tokens[subject] = tok
	f.mu.Unlock()
}

// callerToken returns subject's last access token.
func (f *Front) callerToken(subject string) func(context.Context) (string, error) {
	return func(context.Context) (string, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if tok := f.tokens[subject]; tok != "" {
			return tok, nil
		}
		return "", fmt.Errorf("no access token of the caller is known")
	}
}

// forwardRoots sets roots on the instances that serve c as its own: its
// per-client instances that run, and on the stdio front every shared
// instance (roots.read). It takes c.mu to copy the instances, and no
// lock while it sets them.
//
//lint:ignore SA1019 roots are deprecated upstream (SEP-2577) but still forwarded.
func (c *client) forwardRoots(roots []*mcp.Root) {
	c.mu.Lock()
	instances := c.instanceSet()
	c.mu.Unlock()
	// An instance that starts now is in the list: Running waits for its
	// start (see instanceSet).
	var sups []*conn.Supervisor
	for _, in := range instances {
		if sup := in.Running(); sup != nil {
			sups = append(sups, sup)
		}
	}
	if c.kind == stdioClient {
		sups = append(sups, c.f.supervisors()...)
	}
	for _, sup := range sups {
		if err := sup.SetRoots(roots...); err != nil {
			c.f.opts.Logger.Warn("roots of the client not forwarded: "+err.Error(), "server", sup.Status().Server)
		}
	}
}

// applyLevel sends level, which c has just set, to its instances that run
// and to the shared instances, which get the most verbose level of any
// client (levels.apply).
//
//lint:ignore SA1019 logging is deprecated upstream (SEP-2577) but still relayed.
func (c *client) applyLevel(level mcp.LoggingLevel) {
	c.mu.Lock()
	servers := make([]string, 0, len(c.instances))
	for name := range c.instances {
		servers = append(servers, name)
	}
	c.mu.Unlock()
	for _, name := range servers {
		c.sendLevel(name)
	}
	c.f.sharedLevel()
}

// sendLevel sends c's level to its instance of server, if it runs.
func (c *client) sendLevel(server string) {
	level := c.levels.get()
	if level == "" {
		return
	}
	c.mu.Lock()
	in := c.instances[server]
	c.mu.Unlock()
	if in == nil {
		return
	}
	if sup := in.Running(); sup != nil {
		c.f.setLevel(sup, level)
	}
}
