package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/access"
	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/console"
	"github.com/mcpfsm/mcpfsm/health"
	"github.com/mcpfsm/mcpfsm/host"
	"github.com/mcpfsm/mcpfsm/metrics"
	"github.com/mcpfsm/mcpfsm/sandbox"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// consoleHelp documents the console flags and reloading, for run and serve.
const consoleHelp = `
With -http ADDR, an operator console is served at http://ADDR/: a live
status page (one card per server with its state in the connection
diagram, attempts, next retry, last cause, tools and recent transitions;
Reconnect buttons) and a JSON API (/api/status, /api/events,
POST /api/servers/NAME/reconnect, POST /api/reconnect, POST /api/reload)
that 'mcpfsm status' and 'mcpfsm reconnect' use, and the supervisors'
OpenTelemetry metrics in Prometheus text format at /metrics (state,
tools, transitions, reconnect attempts, outage durations, tool calls;
see 'go doc ./metrics'), and /healthz and /readyz for load balancers.
ADDR must be loopback (127.0.0.1:7777) unless a bearer token is set (see
Access below); then every request needs "Authorization: Bearer TOKEN" (a
browser opens http://ADDR/?token=TOKEN once).

SIGHUP (or POST /api/reload, or with -watch a change of the file, even
one an editor makes by renaming a new file over it) re-reads the config
file: new servers start,
removed ones stop, changed ones restart, and unchanged ones keep their
process and tools (no tools/list_changed). A file that does not load is
reported and the running servers are kept. SIGHUP does not stop mcpfsm.
`

// consoleFlags are the console's flags of run and serve, and those of
// what the host console does beside it: reloads on a change of the file,
// and the trace of every transition.
type consoleFlags struct {
	addr  *string
	watch *bool
	trace *string
}

func addConsoleFlags(fs *flag.FlagSet) consoleFlags {
	return consoleFlags{
		addr:  fs.String("http", "", "serve the operator console at `ADDR`, such as 127.0.0.1:7777 (port 0: any free port)"),
		watch: fs.Bool("watch", false, "reload the config when its file changes, as SIGHUP does"),
		trace: fs.String("trace", "", "append every transition to `FILE` as JSON lines (fsmdot -trace draws them)"),
	}
}

// listen opens the console's listener under rule, or returns nil without
// -http. It runs before any server starts, so a bad address fails at once.
func (c consoleFlags) listen(rule *access.Rule) (net.Listener, error) {
	if *c.addr == "" {
		return nil, nil
	}
	return rule.Listen(*c.addr)
}

// hostConsole is the console of run or serve, its metrics, and the
// reload signal.
type hostConsole struct {
	hs      *host.Host
	cons    *console.Console // nil without -http
	ln      net.Listener
	logger  *slog.Logger
	hangups chan os.Signal
	flags   consoleFlags

	watcher        *host.Watcher    // with -watch
	tracer         *host.TraceFile  // with -trace
	metrics        *metrics.Metrics // with -http: served at /metrics
	provider       *sdkmetric.MeterProvider
	metricsHandler http.Handler
	tally          *authz.Tally // serve's requests by server and caller, for the last hour
	signIns        *signIns     // the sign-ins to remote servers, made by hostOptions
}

// refused counts a request a server's per-caller policy refused.
func (h *hostConsole) refused(server string, v authz.Verdict) {
	reason := metrics.RefusalScope
	if v == authz.Limited {
		reason = metrics.RefusalRateLimit
	}
	h.metrics.Refused(server, reason)
}

// newHostConsole registers for SIGHUP (from now on it no longer stops
// mcpfsm), opens the -trace file and, with a listener, makes the
// supervisors' metrics, served at /metrics (Prometheus text format) once
// [hostConsole.attach] has made the console. Start the servers with
// [hostConsole.hostOptions]. Undo it with [hostConsole.stop].
func newHostConsole(flags consoleFlags, ln net.Listener, logger *slog.Logger) (*hostConsole, error) {
	h := &hostConsole{ln: ln, logger: logger, hangups: make(chan os.Signal, 1), flags: flags, tally: authz.NewTally(clock.New())}
	hangupsReload.Store(true)
	signal.Notify(h.hangups, syscall.SIGHUP)
	if ln != nil {
		mp, handler, err := metrics.Prometheus()
		if err != nil {
			signal.Stop(h.hangups)
			return nil, fmt.Errorf("-http: %w", err)
		}
		if h.metrics, err = metrics.New(mp); err != nil {
			signal.Stop(h.hangups)
			_ = mp.Shutdown(context.Background())
			return nil, fmt.Errorf("-http: %w", err)
		}
		h.provider, h.metricsHandler = mp, handler
	}
	if err := h.trace(*flags.trace); err != nil {
		h.stop()
		return nil, err
	}
	return h, nil
}

// hostOptions are the host.Options every host of run and serve has: the
// file it reloads and how it is read, the logger, the secrets, and the
// console's transitions and metrics.
func (h *hostConsole) hostOptions(hf *hostFlags, logger *slog.Logger, reg conn.Registry) host.Options {
	if h.signIns == nil {
		h.signIns = newSignIns(hf.cmd, *hf.path, *hf.store, hf.stderr, logger)
	}
	return host.Options{Path: *hf.path, Load: hf.reading.options(), Logger: logger, Registry: reg, Secrets: secrets,
		OnTransition: h.record, Start: h.start, StartInstance: h.startInstance,
		SignIn: h.signIns.handler}
}

// start starts a server's shared instance, measured with -http.
func (h *hostConsole) start(ctx context.Context, c conn.Config) (*conn.Supervisor, error) {
	if h.metrics != nil {
		return h.metrics.Start(ctx, c)
	}
	return conn.Start(ctx, c)
}

// startInstance starts a client's own instance of a server: its calls are
// measured with -http, and the instances are counted by the host's status
// (see attach), not each as a supervisor of the server.
func (h *hostConsole) startInstance(ctx context.Context, c conn.Config) (*conn.Supervisor, error) {
	if h.metrics != nil {
		c.OnCall = h.metrics.OnCall
	}
	return conn.Start(ctx, c)
}

// attach makes the console of hs (with a listener) and, with -watch, its
// watcher, before its servers start, so that it sees every transition.
func (h *hostConsole) attach(hs *host.Host, sf *surfaces, reg *conn.ToolRegistry) error {
	h.hs = hs
	if h.ln != nil {
		o := console.Options{Rule: sf.console, TLS: sf.tls, Health: health.New(hs.Health),
			Logger: h.logger, ToolsChanged: reg.Changed, Metrics: h.metricsHandler, Redact: secrets.String, Callers: h.tally.Counts}
		if h.tracer != nil {
			o.TracePath = h.tracer.Path()
		}
		h.cons = console.New(consoleHost{hs: hs, signIns: h.signIns}, o)
		h.metrics.CountInstances(func() map[string]int {
			out := map[string]int{}
			for _, st := range hs.Status() {
				for _, n := range st.Instances {
					out[st.Config.Name] += n
				}
			}
			return out
		})
	}
	if *h.flags.watch {
		return h.watch()
	}
	return nil
}

// record passes t to the console and the trace.
func (h *hostConsole) record(t conn.Transition) {
	if h.tracer != nil {
		h.tracer.Record(t)
	}
	if h.cons != nil {
		h.cons.Record(t)
	}
}

// trace opens the -trace file, before the servers start.
func (h *hostConsole) trace(path string) error {
	if path == "" {
		return nil
	}
	t, err := host.OpenTrace(path, secrets.String)
	if err != nil {
		return err
	}
	h.tracer = t
	return nil
}

// watch makes run reload the config whenever its file changes.
func (h *hostConsole) watch() error {
	w, err := h.hs.Watch(host.WatchOptions{Reloaded: func(err error) {
		if err == nil && h.cons != nil {
			h.cons.Notify()
		}
	}})
	if err != nil {
		return fmt.Errorf("-watch: %w", err)
	}
	h.watcher = w
	return nil
}

// serve runs [hostConsole.run] until the returned stop is called (or ctx
// ends); stop waits for it.
func (h *hostConsole) serve(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// run serves the console, reloads on SIGHUP (and, with watch, on a change
// of the file) until ctx ends.
func (h *hostConsole) run(ctx context.Context) {
	if h.watcher != nil {
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			_ = h.watcher.Run(ctx)
		}()
		defer func() { <-watched }()
	}
	served := make(chan error, 1)
	if h.cons != nil {
		go func() { served <- h.cons.Serve(ctx, h.ln) }()
		scheme := "http"
		if h.cons.TLS() {
			scheme = "https"
		}
		h.logger.Info(fmt.Sprintf("console at %s://%s/", scheme, h.ln.Addr()))
	} else {
		served <- nil
	}
	for {
		select {
		case <-h.hangups:
			h.logger.Info("SIGHUP: reloading the config")
			if err := h.hs.Reload(ctx); err == nil && h.cons != nil {
				h.cons.Notify()
			}
		case <-ctx.Done():
			if err := <-served; err != nil {
				h.logger.Error("console: " + err.Error())
			}
			return
		}
	}
}

// stop undoes newHostConsole: SIGHUP is no longer caught, and the
// metrics are shut down.
func (h *hostConsole) stop() {
	signal.Stop(h.hangups)
	if h.signIns != nil {
		h.signIns.close()
	}
	if h.tracer != nil {
		if err := h.tracer.Close(); err != nil {
			h.logger.Error("trace not fully written: "+err.Error(), "file", h.tracer.Path())
		}
	}
	if h.ln != nil {
		h.ln.Close()
	}
	if h.metrics != nil {
		if err := errors.Join(h.metrics.Close(), h.provider.Shutdown(context.Background())); err != nil {
			h.logger.Warn("metrics: " + err.Error())
		}
	}
}

// consoleHost is a host as the console sees it (console.Host).
type consoleHost struct {
	hs      *host.Host
	signIns *signIns // nil: the console starts no sign-in
}

var _ console.Host = consoleHost{}

// Servers is every server with a supervisor.
func (c consoleHost) Servers() []console.Server {
	var out []console.Server
	for _, sup := range c.hs.Supervisors() {
		out = append(out, consoleServer{hs: c.hs, name: sup.Status().Server, sup: sup, signIns: c.signIns})
	}
	return out
}

// Reload re-reads the host's file; a host without one cannot.
func (c consoleHost) Reload(ctx context.Context) error {
	err := c.hs.Reload(ctx)
	if errors.Is(err, host.ErrNoPath) {
		return fmt.Errorf("%w: %w", console.ErrReloadUnsupported, err)
	}
	return err
}

// consoleServer is one running server as the console sees it, by name:
// a reload that replaces its supervisor shows at once.
type consoleServer struct {
	hs   *host.Host
	name string
	sup  *conn.Supervisor // when the console asked

	signIns *signIns
}

var _ console.Sandboxed = consoleServer{}

func (s consoleServer) current() *conn.Supervisor {
	if sup, ok := s.hs.Supervisor(s.name); ok {
		return sup
	}
	return s.sup
}

func (s consoleServer) Status() conn.Status { return s.current().Status() }

func (s consoleServer) Reconnect(ctx context.Context) error { return s.current().Reconnect(ctx) }

var _ console.SignInStarter = consoleServer{}

// SignIn starts the operator's sign-in to the server from the console
// (console.SignInStarter).
func (s consoleServer) SignIn(ctx context.Context) (string, error) {
	if s.signIns == nil {
		return "", errors.New("this host signs in to no server")
	}
	return s.signIns.operatorSignIn(ctx, s.name)
}

var _ console.Instanced = consoleServer{}

// Instances is the server's per-client instances by state
// (console.Instanced).
func (s consoleServer) Instances() map[conn.State]int {
	for _, st := range s.hs.Status() {
		if st.Config.Name == s.name {
			return st.Instances
		}
	}
	return nil
}

// Sandbox is what the server's sandbox allows (console.Sandboxed): the
// effective lists, as check prints them.
func (s consoleServer) Sandbox() []string {
	if cfg, ok := s.hs.Config(s.name); ok && cfg.Sandbox != nil {
		return effectiveSandbox(cfg)
	}
	return nil
}

// sandboxLines caches effectiveSandbox by server name, for the config's
// Spec (a reload makes a new one): the console asks on every status
// request, and the effective lists look through the writable directories.
var sandboxLines sync.Map // name -> sandboxCache

type sandboxCache struct {
	spec  *sandbox.Spec
	lines []string
}

func effectiveSandbox(cfg config.Server) []string {
	if c, ok := sandboxLines.Load(cfg.Name); ok && c.(sandboxCache).spec == cfg.Sandbox {
		return c.(sandboxCache).lines
	}
	l := sandboxDescribe(cfg)
	sandboxLines.Store(cfg.Name, sandboxCache{cfg.Sandbox, l})
	return l
}
