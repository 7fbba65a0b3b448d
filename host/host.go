// Package host runs a whole MCP host config: every server of a
// config.Config under its own conn.Supervisor, all publishing to one
// registry (and catalog), with the set kept as the config says.
//
// It is the library half of mcpfsm's run and serve: [New] and
// [Host.Start] start every server and wait (bounded) for their first
// attempts; [Host.Apply] and [Host.Reload] apply a new config by diffing
// the servers by name (new ones start, removed ones stop, changed ones
// restart, unchanged ones keep their process and tools); [Host.Reconnect]
// and [Host.Status] serve an operator; [Host.Close] stops everything, and
// no server process outlives it. A Host is the Backends of a front
// (package front): it gives the front each server's status, supervisors,
// isolation, per-client instances and per-caller rules.
//
// Every conn.Config is assembled in one place: [ConnConfig] gives a
// server's own settings (transport, policy, timeouts, tool filter,
// concurrency limit), the host adds what it shares (registry, catalog,
// logger, transitions), Options.Configure what its front sets (client
// options), and Options.Start starts it (instrumented, if the caller
// measures its servers). The host depends on no front, console or
// metrics.
package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/health"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultStartTimeout is how long [Host.Start] waits for the servers'
// first attempts when Options.StartTimeout is zero.
const DefaultStartTimeout = 10 * time.Second

// Options configure a [Host]. Every field is optional.
type Options struct {
	// Path is the config file [Host.Reload] re-reads; "" makes Reload
	// return [ErrNoPath].
	Path string
	// Load is how Reload reads it (config.Load's options); nil is the
	// default.
	Load *config.Options
	// Logger receives the supervisors' and the host's logs. Nil means
	// slog.Default(), as for conn.Config.Logger and front.Options.Logger:
	// a host's failures are never silent by default; give
	// slog.New(slog.DiscardHandler) to drop them.
	Logger *slog.Logger
	// Registry receives every server's tools; nil means a new
	// conn.ToolRegistry ([Host.Registry]).
	Registry conn.Registry
	// Catalog, if set, receives every server's resources, templates and
	// prompts.
	Catalog *conn.Catalog
	// Configure, if set, changes each server's shared instance's
	// conn.Config before it starts, once the host has set what it knows
	// (a front sets its client options: front.Front.Configure).
	Configure func(server string, c *conn.Config)
	// OnTransition, if set, receives every supervisor's transitions
	// (conn.Config.OnTransition).
	OnTransition func(conn.Transition)
	// Start starts each server's shared instance from its conn.Config,
	// once the host and Configure have set it; nil means conn.Start. A
	// host that measures its servers passes a starter that instruments
	// them (package metrics' Metrics.Start).
	Start func(ctx context.Context, c conn.Config) (*conn.Supervisor, error)
	// StartInstance starts each per-client instance ([Host.StartInstance])
	// from its conn.Config, once its owner's configure has set it; nil
	// means conn.Start.
	StartInstance func(ctx context.Context, c conn.Config) (*conn.Supervisor, error)
	// StartTimeout bounds Start's wait for the first attempts; zero means
	// DefaultStartTimeout, negative no wait.
	StartTimeout time.Duration
	// StderrLines is how many last lines of each stdio server's stderr
	// are kept for [Host.Status]; zero means 20.
	StderrLines int
	// Clock is the time of the servers' rate limiters ([Host.Guard]).
	// Nil means the real clock.
	Clock clock.Clock
	// OnApply, if set, is called after every [Host.Apply] (and Reload)
	// with what changed: a front re-reads its clients' views then, since
	// a server whose per-caller rules alone changed keeps running.
	OnApply func(Changes)
	// Secrets, if set, receives the secret values of every server the
	// host starts (env and envFile values, header values, URL credentials
	// and query values: [AddSecrets]) before it starts, and hides them in
	// what the host shows: [Host.Status], [Host.Health], the stderr lines
	// it logs and keeps.
	Secrets Secrets
	// SignIn, if set, returns the OAuth handler of an http server (nil
	// for none): the host gives it to the server's conn.HTTP transport,
	// shared instance and per-client ones alike, unless the server's
	// headers carry an Authorization of their own or its oauth says
	// "enabled": false. Package signin's Handler is one.
	SignIn func(s config.Server) auth.OAuthHandler
}

// signIn sets the OAuth handler of c's transport for s (Options.SignIn).
func (o *Options) signIn(s config.Server, c *conn.Config) {
	tr, ok := c.Transport.(*conn.HTTP)
	if !ok || o.SignIn == nil || tr.OAuthHandler != nil || s.Headers.Get("Authorization") != "" || (s.OAuth != nil && s.OAuth.Disabled) {
		return
	}
	if hd := o.SignIn(s); hd != nil {
		tr.OAuthHandler = hd
	}
}

// Secrets is a registry of secret values, hidden by value wherever String
// is applied (mcpfsm's internal/redact.Secrets).
type Secrets interface {
	Add(name, value string)
	String(text string) string
}

// Host is a running set of supervised servers. Create it with [New].
type Host struct {
	opts Options
	reg  conn.Registry
	log  *slog.Logger

	change sync.Mutex // serialises Start, Apply and Close
	closed bool       // under change: Close ran; nothing starts any more

	mu  sync.Mutex
	all []*server // sorted by name
}

// server is one configured server and what started it.
type server struct {
	cfg    config.Server
	sup    *conn.Supervisor // nil when conn.Start failed
	err    error            // Start's, then the first attempt's error
	stderr *tailWriter

	guard authz.Guard // its per-caller rules and limit, from cfg

	mu        sync.Mutex
	instances []*conn.Supervisor // its per-client instances (StartInstance)
	retired   bool               // the server stopped: it starts no more instances
}

// New returns a host with no servers yet: start them with [Host.Start].
// Its methods may be given to a front or console before that.
func New(o Options) *Host {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Registry == nil {
		o.Registry = conn.NewRegistry()
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.StderrLines <= 0 {
		o.StderrLines = 20
	}
	if o.Clock == nil {
		o.Clock = clock.New()
	}
	if o.Start == nil {
		o.Start = conn.Start
	}
	if o.StartInstance == nil {
		o.StartInstance = conn.Start
	}
	return &Host{opts: o, reg: o.Registry, log: o.Logger}
}

// Registry is the registry every server publishes its tools to.
func (h *Host) Registry() conn.Registry { return h.reg }

// Start starts every server of cfg, concurrently, and waits at most
// Options.StartTimeout (or until ctx ends) for each one's first attempt.
// A server that could not be started, or whose first attempt failed, is
// reported by [Host.Failures]; the others run. It returns an error only
// when the host is closed.
func (h *Host) Start(ctx context.Context, cfg *config.Config) error {
	h.change.Lock()
	defer h.change.Unlock()
	if h.closed {
		return fmt.Errorf("host: %w: closed", conn.ErrClosed)
	}
	started := h.startAll(ctx, cfg.Servers, true)
	h.set(append(h.running(), started...))
	return nil
}

// startAll starts servers concurrently; with wait, it waits for their
// first attempts, bounded by StartTimeout.
func (h *Host) startAll(ctx context.Context, servers []config.Server, wait bool) []*server {
	// A failOnStartupError server's conn.Start waits for its first
	// attempt: bounded by the same deadline as the others' when Start
	// waits, by ctx alone when it does not.
	deadline := time.Now().Add(h.opts.StartTimeout)
	sctx, cancel := ctx, context.CancelFunc(func() {})
	if wait && h.opts.StartTimeout > 0 {
		sctx, cancel = context.WithDeadline(ctx, deadline)
	}
	defer cancel()
	out := make([]*server, len(servers))
	var wg sync.WaitGroup
	for i, srv := range servers {
		if h.opts.Secrets != nil {
			AddSecrets(h.opts.Secrets, srv)
		}
		st := &server{cfg: srv, stderr: newTailWriter(h.log, srv.Name, h.opts.StderrLines, h.hide), guard: h.guardOf(srv, authz.Guard{})}
		out[i] = st
		wg.Go(func() { st.sup, st.err = h.startOne(sctx, st) })
	}
	wg.Wait()
	if wait && h.opts.StartTimeout > 0 {
		waitReady(ctx, out, time.Until(deadline))
	}
	return out
}

// startOne assembles st's conn.Config and starts its supervisor.
func (h *Host) startOne(ctx context.Context, st *server) (*conn.Supervisor, error) {
	o := h.opts
	c := ConnConfig(st.cfg, st.stderr)
	o.signIn(st.cfg, &c)
	c.Registry, c.Logger, c.OnTransition, c.Catalog = h.reg, o.Logger, o.OnTransition, o.Catalog
	for _, uri := range st.cfg.Roots {
		c.Roots = append(c.Roots, &mcp.Root{URI: uri}) //lint:ignore SA1019 roots are deprecated upstream (SEP-2577) but still served.
	}
	if o.Configure != nil {
		o.Configure(st.cfg.Name, &c)
	}
	return o.Start(ctx, c)
}

// waitReady waits, at most timeout, for the first attempt of every started
// server, and records its error.
func waitReady(ctx context.Context, all []*server, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, st := range all {
		if st.sup == nil {
			continue
		}
		wg.Go(func() {
			if err := st.sup.Ready(ctx); err != nil {
				if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
					s := st.sup.Status()
					err = fmt.Errorf("mcp server %q: not connected within %v (state %s)", st.cfg.Name, timeout, s.State)
					if s.LastErr != nil {
						err = fmt.Errorf("%w; last error: %v", err, s.LastErr)
					}
				}
				st.err = err
			}
		})
	}
	wg.Wait()
}

// set replaces the running set.
func (h *Host) set(all []*server) {
	all = slices.Clone(all)
	slices.SortFunc(all, func(a, b *server) int { return cmp.Compare(a.cfg.Name, b.cfg.Name) })
	h.mu.Lock()
	h.all = all
	h.mu.Unlock()
}

// running returns the running set.
func (h *Host) running() []*server {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.all)
}

func (h *Host) lookup(name string) (*server, bool) {
	for _, st := range h.running() {
		if st.cfg.Name == name {
			return st, true
		}
	}
	return nil, false
}

// ServerStatus is one configured server as [Host.Status] reports it.
type ServerStatus struct {
	Config config.Server
	// Status is its supervisor's; the zero Status when it has none.
	Status conn.Status
	// Err is why it has no supervisor, or why its first attempt failed.
	Err error
	// Fatal: it has no supervisor, or its first attempt failed and the
	// config asks to fail on that (failOnStartupError).
	Fatal bool
	// Stderr is the last lines of a stdio server's stderr.
	Stderr []string
	// Instances counts the instances it runs now beside its shared one,
	// by the state of their connection (see [Host.StartInstance]): a
	// per-client server's per-client instances, and a shared server's
	// instance for 2026-07-28 clients (its logs say era=2026-07-28).
	Instances map[conn.State]int
}

// hide returns text with the secrets of Options.Secrets hidden.
func (h *Host) hide(text string) string {
	if h.opts.Secrets == nil {
		return text
	}
	return h.opts.Secrets.String(text)
}

// hideErr is err with its message passed through hide; it unwraps to err.
func (h *Host) hideErr(err error) error {
	if err == nil {
		return nil
	}
	if msg := err.Error(); h.hide(msg) != msg {
		return &hiddenError{err: err, msg: h.hide(msg)}
	}
	return err
}

// hiddenError is an error whose message lost its secrets.
type hiddenError struct {
	err error
	msg string
}

func (e *hiddenError) Error() string { return e.msg }
func (e *hiddenError) Unwrap() error { return e.err }

// Status reports every configured server, sorted by name. The errors'
// messages have Options.Secrets hidden; the Config is the server's own,
// secrets included: show it to nobody.
func (h *Host) Status() []ServerStatus {
	var out []ServerStatus
	for _, st := range h.running() {
		s := ServerStatus{Config: st.cfg, Err: h.hideErr(st.err), Stderr: st.stderr.Tail(),
			Fatal: st.sup == nil || st.err != nil && st.cfg.FailOnStartupError}
		if st.sup != nil {
			s.Status = st.sup.Status()
			s.Status.LastErr = h.hideErr(s.Status.LastErr)
		}
		for _, sup := range st.live() {
			if s.Instances == nil {
				s.Instances = map[conn.State]int{}
			}
			s.Instances[sup.State()]++
		}
		out = append(out, s)
	}
	return out
}

// Failures is the servers of [Host.Status] that did not come up.
func (h *Host) Failures() []ServerStatus {
	return slices.DeleteFunc(h.Status(), func(s ServerStatus) bool { return s.Err == nil })
}

// Health reports every configured server for package health's probes.
func (h *Host) Health() []health.Status {
	var out []health.Status
	for _, st := range h.running() {
		hs := health.Status{Name: st.cfg.Name, Err: h.hideErr(st.err), Instances: len(st.live())}
		if st.sup != nil {
			hs.Status, hs.Err = st.sup.Status(), nil
			hs.Status.LastErr = h.hideErr(hs.Status.LastErr)
		}
		out = append(out, hs)
	}
	return out
}

// StatusOf returns the status of server's supervisor, if it has one.
func (h *Host) StatusOf(server string) (conn.Status, bool) {
	if sup, ok := h.Supervisor(server); ok {
		return sup.Status(), true
	}
	return conn.Status{}, false
}

// Supervisor returns the supervisor of server, if it has one.
func (h *Host) Supervisor(server string) (*conn.Supervisor, bool) {
	st, ok := h.lookup(server)
	if !ok || st.sup == nil {
		return nil, false
	}
	return st.sup, true
}

// Config returns the configuration server runs with now, if the host
// runs it. It holds the server's secrets: show it to nobody.
func (h *Host) Config(server string) (config.Server, bool) {
	st, ok := h.lookup(server)
	if !ok {
		return config.Server{}, false
	}
	return st.cfg, true
}

// Supervisors returns every running supervisor.
func (h *Host) Supervisors() []*conn.Supervisor {
	var out []*conn.Supervisor
	for _, st := range h.running() {
		if st.sup != nil {
			out = append(out, st.sup)
		}
	}
	return out
}

// Reconnect starts an attempt of server now and returns its outcome (see
// conn.Supervisor.Reconnect).
func (h *Host) Reconnect(ctx context.Context, server string) error {
	sup, ok := h.Supervisor(server)
	if !ok {
		return fmt.Errorf("host: unknown server %q", server)
	}
	return sup.Reconnect(ctx)
}

// Guard returns the per-caller rules and rate limit of server (its
// "allowScopes", "toolScopes" and "rateLimit"), for a front.
func (h *Host) Guard(server string) authz.Guard {
	if st, ok := h.lookup(server); ok {
		return st.guard
	}
	return authz.Guard{}
}

// guardOf is the Guard of srv, with old's limiter when its rate is the
// same: a reload does not refill every caller's allowance.
func (h *Host) guardOf(srv config.Server, old authz.Guard) authz.Guard {
	rules, err := srv.Rules()
	if err != nil {
		h.log.Warn("server's access rules not applied: "+err.Error(), "server", srv.Name)
	}
	lim := srv.Limiter(h.opts.Clock)
	if old.Limiter != nil && lim != nil && old.Limiter.Rate() == lim.Rate() {
		lim = old.Limiter
	}
	return authz.Guard{Rules: rules, Limiter: lim}
}
