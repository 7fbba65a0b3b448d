package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcpfsm/mcpfsm/access"
	"github.com/mcpfsm/mcpfsm/audit"
	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/front"
	"github.com/mcpfsm/mcpfsm/health"
	"github.com/mcpfsm/mcpfsm/host"
	"github.com/mcpfsm/mcpfsm/signin"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const serveUsage = `Usage: mcpfsm serve -config FILE [-listen ADDR] [-http ADDR] [-token-file FILE] [-timeout 10s] [-log-format text|json] [-log-level info]

Supervises every server of FILE and serves all their tools, resources
and prompts as one MCP server: over stdin and stdout by default, so that
an MCP host starts it like any stdio server, or over Streamable HTTP at
ADDR with -listen.
Replace the servers of your host's config with one entry:

  {"mcpServers": {"mcpfsm": {"command": "mcpfsm", "args": ["serve", "-config", "/path/to/servers.json"]}}}

Tools keep their public names, mcp__<server>__<tool> (with -names raw,
the servers' own names; a name two servers share stays prefixed for the
later one). When the set of
tools changes (a server came up, or gave up), the client gets
notifications/tools/list_changed; a reconnect that lists the same tools
sends nothing. A call made while its server is down is answered at once
with a tool error (isError) such as
  server "fs": connection lost; reconnecting in 2s (attempt 3/10); tool "mcp__fs__read" was not called; try again after the next attempt

Resources, resource templates and prompts are served too: prompts as
mcp__<server>__<prompt>, resources under their servers' URIs; a URI that
two servers list is the first's (by name), the other's copy is listed as
mcpfsm:<server>/<uri>. Reads, prompts, completions and subscriptions go
to the right server.

With -tools search the client is listed two tools instead of all of
them: mcpfsm_search_tools (a query in words, an optional server, a limit)
answers the best matches with their input schemas, among the tools this
caller may see and use, and mcpfsm_call_tool (name, arguments) calls one
as a direct call would (scopes, rate limits, audit, outage answers);
-pin LIST lists some tools as well. -max-result-bytes N (or a server's
"maxResultBytes") cuts a larger tool result at a content boundary with a
note saying how much was cut, and keeps the whole of it for a while as a
resource only its caller can read (resources/read, paged with
?offset=N&length=M).

Both protocol eras are served on both fronts (2026-07-28 and 2025-11-25),
whatever each server speaks. A server's elicitation, sampling and roots
requests, progress and log messages during a call go to the client that
made the call, on that call's stream (to a 2026-07-28 client as the
call's input requests); each client's roots and logging level are its
own.

Before serving, serve waits (at most -timeout) for every server's first
connection attempt, so the first tools/list has their tools; servers
that are still down come later, with a tools/list_changed.

A stdio server with "sandboxEnabled": true (every stdio server, with
-sandbox-all, unless it says false) runs sandboxed on Linux: its own user
and network namespace, Landlock, rlimits, and mcpfsm's filtering proxy as
its only way out (docs/sandbox.md).

Over stdio, serve ends when its client disconnects (closes stdin), after
stopping every server. With -listen it serves until SIGINT or SIGTERM,
then turns /readyz to 503, ends open streams and stops every server at
once. Beside /mcp, -listen answers /healthz (200 while serve runs; no
credentials needed) and /readyz (200 when every server is established,
else 503 naming each one that is not). Sessions idle for
-session-timeout end; at most -max-sessions are served at once. -audit
FILE appends one JSON line per tool call, resource read and prompt get
(who, which server, outcome, duration, argument size; values only with
-audit-args). Logs go to stderr, never to stdout.
` + accessHelp + consoleHelp + startFlagsHelp + `
Examples:
  mcpfsm serve -config ~/.cursor/mcp.json
  mcpfsm serve -config .vscode/mcp.json -listen 127.0.0.1:8808
  MCPFSM_TOKEN=$(openssl rand -hex 32) mcpfsm serve -config servers.json -listen 0.0.0.0:8808 -allow-host mcp.example.com
`

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("serve", serveUsage)
	hf := addHostFlags(fs, "serve", "info")
	sv := addServeFlags(fs)
	cf := addConsoleFlags(fs)
	af := addAccessFlags(fs, true)
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return unexpectedArg(stderr, "serve", fs.Arg(0))
	}
	if msg := sv.check(); msg != "" {
		return usageErr(stderr, "serve", "%s", msg)
	}
	logger, cfg, stderr, code := hf.load(stderr)
	if cfg == nil {
		return code
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "mcpfsm serve: %v\n", err)
		return exitFail
	}
	// The access rules and both listeners come first: a bad address or
	// flag fails before any server starts.
	sf, err := af.build(*sv.listen, logger)
	if err != nil {
		return fail(err)
	}
	defer sf.removeTokens()
	ln, cln, err := sf.listen(*sv.listen, cf)
	if err != nil {
		return fail(err)
	}
	trail, closeTrail, err := sv.openAudit(logger)
	if err != nil {
		for _, l := range []net.Listener{ln, cln} {
			if l != nil {
				l.Close()
			}
		}
		return fail(err)
	}
	defer closeTrail()
	hc, err := newHostConsole(cf, cln, logger)
	if err != nil {
		return fail(err)
	}
	defer hc.stop()
	tracer, stopTracing, err := startTracing(ctx, logger)
	if err != nil {
		return fail(fmt.Errorf("tracing: %w", err))
	}
	defer stopTracing()

	reg, cat := conn.NewRegistry(), conn.NewCatalog()
	ho := hc.hostOptions(hf, logger, reg)
	var redirects *signin.Redirects
	if sf.callback != "" && ln != nil {
		// OAuth callers sign in to http servers as themselves (unless
		// upstreamAuth is "shared"); their redirects land on -listen.
		redirects = signin.NewRedirects(nil)
		hc.signIns.perCaller(redirects, sf.callback)
	}
	ho.Catalog, ho.StartTimeout = cat, *sv.timeout
	var hs *host.Host
	hs, f := newGateway(ho, front.Options{Registry: reg, Catalog: cat, Logger: logger, Audit: trail, Names: sv.names,
		InstanceIdle: orNever(*sv.instanceIdle), Implementation: &mcp.Implementation{Name: "mcpfsm", Version: version()},
		Tally: hc.tally, Tracer: tracer, OnRefused: hc.refused, Redact: secrets.String,
		Tools: sv.toolsOptions(cfg), Limits: sv.resultLimits(func() *host.Host { return hs }, hc.metrics.ResultCut),
		SignInHint: hc.signIns.hint, CallerSignIn: hc.signIns.callerHandler})
	hc.signIns.setFront(f)
	if err := hc.attach(hs, sf, reg); err != nil {
		return fail(err)
	}
	_ = hs.Start(ctx, cfg)
	stopConsole := func() {}
	var stopping time.Time // when a signal started the shutdown
	code = exitOK
	if slices.ContainsFunc(hs.Status(), func(st host.ServerStatus) bool { return st.Fatal }) {
		code = exitFail
		reportFailures(stderr, "serve", hs)
	} else {
		for _, st := range hs.Failures() {
			logger.Warn("not connected yet; serving without its tools until it comes up", "server", st.Config.Name, "err", st.Err)
		}
		// The console and SIGHUP reloads run while the front serves, and
		// stop before the servers are closed.
		stopConsole = hc.serve(ctx)
		if ln != nil {
			err = serveHTTP(ctx, f, ln, logger, httpServing{health: health.New(hs.Health), stopping: &stopping,
				rule: sf.mcp, tls: sf.tls, opts: sv.httpOptions(), callback: redirects})
		} else {
			defer catchSIGPIPE()() // until every server is stopped
			if stdinIsTerminal() {
				fmt.Fprint(stderr, terminalHint(*hf.path))
			}
			err = serveStdio(ctx, f, stdout, logger, len(reg.Tools()), len(cfg.Servers))
		}
		if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, syscall.EPIPE) {
			fmt.Fprintf(stderr, "mcpfsm serve: %v\n", err)
			code = exitFail
		}
	}
	if ln != nil {
		ln.Close()
	}
	stopConsole()
	if closeHost(ctx, hs, "serve", stderr) {
		code = exitFail
	}
	if !stopping.IsZero() {
		logger.Info("stopped", "took", time.Since(stopping).Round(time.Millisecond))
	}
	return code
}

// The host is what the front serves.
var _ front.Backends = (*host.Host)(nil)

// newGateway makes serve's host and front, each made for the other: the
// host starts every server with the front's client options
// (front.Front.Configure) and tells it of every reload, and the front
// serves the host's servers (its Backends).
func newGateway(ho host.Options, fo front.Options) (*host.Host, *front.Front) {
	var f *front.Front // set before the host starts a server or applies a config
	ho.Configure = func(server string, c *conn.Config) { f.Configure(server, c) }
	ho.OnApply = func(host.Changes) { f.Update() }
	hs := host.New(ho)
	fo.Backends = hs
	f = front.New(fo)
	return hs, f
}

// serveFlags are serve's own flags.
type serveFlags struct {
	listen                       *string
	timeout                      *time.Duration
	names                        front.Names
	sessionTimeout, instanceIdle *time.Duration
	maxSessions, perSubject      *int
	auditPath                    *string
	auditArgs                    *bool
	tools, pin                   *string
	maxResultBytes               *int
}

func addServeFlags(fs *flag.FlagSet) *serveFlags {
	sv := &serveFlags{
		listen:         fs.String("listen", "", "serve Streamable HTTP at `ADDR` (such as 127.0.0.1:8808) instead of stdio"),
		timeout:        fs.Duration("timeout", 10*time.Second, "how long to wait for the servers' first attempts before serving"),
		names:          front.NamesPrefixed,
		sessionTimeout: fs.Duration("session-timeout", front.DefaultSessionTimeout, "end a -listen session idle for `D` (0: never)"),
		maxSessions:    fs.Int("max-sessions", front.DefaultMaxSessions, "serve at most `N` -listen sessions at once; beyond, 503"),
		perSubject:     fs.Int("max-sessions-per-subject", 0, "serve at most `N` -listen sessions of one OAuth caller at once (0: a quarter of -max-sessions)"),
		instanceIdle:   fs.Duration("instance-idle", front.DefaultInstanceIdle, "close a client's own instance of a server idle for `D` (0: never); its next request starts it again"),
		auditPath:      fs.String("audit", "", "append one JSON line per tool call, resource read and prompt get to `FILE`"),
		auditArgs:      fs.Bool("audit-args", false, "with -audit, record the arguments' values too (they may hold secrets)"),
		tools:          fs.String("tools", "", "list every tool (`full`, the default), or a search tool and a call tool (search) that find and call them; over the config's \"toolList\": {\"mode\": ...}"),
		pin:            fs.String("pin", "", "in search mode, also list these tools (a comma-separated `LIST` of their names); over the config's \"toolList\": {\"pin\": [...]}"),
		maxResultBytes: fs.Int("max-result-bytes", 0, "cut a tool result larger than `N` bytes (a server's maxResultBytes wins) and keep it whole for its caller as a resource (0: no limit)"),
	}
	fs.Var(&sv.names, "names", "tool and prompt names: `prefixed` (mcp__<server>__<name>) or raw (the servers' own; a shared name stays prefixed for the later server)")
	return sv
}

// check says what is wrong with the flags' values, "" when nothing is.
func (sv *serveFlags) check() string {
	switch {
	case *sv.timeout <= 0:
		return "-timeout must be positive"
	case *sv.auditArgs && *sv.auditPath == "":
		return "-audit-args needs -audit FILE"
	case *sv.tools != "" && *sv.tools != config.ToolsFull && *sv.tools != config.ToolsSearch:
		return fmt.Sprintf("-tools %q: give full or search", *sv.tools)
	case *sv.pin != "" && *sv.tools == config.ToolsFull:
		return "-pin lists tools in search mode only: give -tools search, or drop -pin"
	case *sv.maxResultBytes < 0:
		return "-max-result-bytes must be 0 (no limit) or a positive number of bytes"
	}
	return ""
}

// toolsOptions say how the front lists tools: -tools and -pin, over the
// config's "toolList".
func (sv *serveFlags) toolsOptions(cfg *config.Config) front.ToolsOptions {
	mode, pin := *sv.tools, cfg.Tools.Pin
	if mode == "" {
		mode = cfg.Tools.Mode
	}
	if *sv.pin != "" {
		pin = nil
		for _, name := range strings.Split(*sv.pin, ",") {
			if name = strings.TrimSpace(name); name != "" {
				pin = append(pin, name)
			}
		}
	}
	return front.ToolsOptions{Search: mode == config.ToolsSearch, Pin: pin}
}

// resultLimits are the front's result limits: -max-result-bytes, and each
// server's maxResultBytes as the host's current configuration has it.
func (sv *serveFlags) resultLimits(hs func() *host.Host, onCut func(server string, size, cut int)) front.ResultLimits {
	return front.ResultLimits{MaxBytes: *sv.maxResultBytes, OnCut: onCut,
		PerServer: func(server string) (int, bool) {
			if h := hs(); h != nil {
				if srv, ok := h.Config(server); ok && srv.MaxResultBytes > 0 {
					return srv.MaxResultBytes, true
				}
			}
			return 0, false
		}}
}

// httpOptions are the -listen front's options.
func (sv *serveFlags) httpOptions() front.HTTPOptions {
	return front.HTTPOptions{SessionTimeout: orNever(*sv.sessionTimeout), MaxSessions: *sv.maxSessions,
		MaxSessionsPerSubject: *sv.perSubject, HostChecked: true,
		Subject:  func(r *http.Request) string { return access.Subject(r.Context()) },
		Operator: func(r *http.Request) bool { return access.Operator(auth.TokenInfoFromContext(r.Context())) }}
}

// openAudit opens the -audit trail, nil without -audit; closeTrail
// flushes it and reports what it could not write.
func (sv *serveFlags) openAudit(logger *slog.Logger) (trail *audit.Log, closeTrail func(), err error) {
	if *sv.auditPath == "" {
		return nil, func() {}, nil
	}
	trail, err = audit.Open(*sv.auditPath, audit.Options{Args: *sv.auditArgs, Redact: secrets.String})
	if err != nil {
		return nil, nil, err
	}
	return trail, func() {
		if err := trail.Close(); err != nil {
			logger.Error("audit trail not fully written: "+err.Error(), "file", *sv.auditPath)
		}
		if n := trail.Dropped(); n > 0 {
			logger.Warn(fmt.Sprintf("%d audit records dropped: the file was written too slowly", n), "file", *sv.auditPath)
		}
	}, nil
}

// catchSIGPIPE catches SIGPIPE until stop is called. A client that goes
// away closes the pipe serve writes to. By default that write kills a Go
// program with SIGPIPE, which would orphan every server; caught, it fails
// with EPIPE and serve shuts down in order. (Caught, not ignored: an
// ignored signal would stay ignored in the servers started later.)
func catchSIGPIPE() (stop func()) {
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	return func() { signal.Stop(sigpipe) }
}

// stdinIsTerminal reports whether a person, not an MCP host, is at
// serve's stdin: a character device other than the null device. A
// variable, for tests.
var stdinIsTerminal = func() bool {
	fi, err := os.Stdin.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}

// terminalHint is what serve says to a person who ran it in a terminal:
// what it waits for and what they may have meant.
func terminalHint(config string) string {
	return `mcpfsm serve: stdin is a terminal, but serve speaks MCP (JSON-RPC) on stdin and stdout,
  for an MCP host that starts it; it waits for one (Ctrl-C or Ctrl-D ends it). To see the
  tools: mcpfsm tools -config ` + config + `; to serve clients over HTTP: add -listen 127.0.0.1:8808;
  to have a host start it: {"command": "mcpfsm", "args": ["serve", "-config", ` + strconv.Quote(config) + `]}.
`
}

// serveStdio serves f to the one client on stdin and stdout until it
// disconnects or ctx ends.
func serveStdio(ctx context.Context, f *front.Front, stdout io.Writer, logger *slog.Logger, tools, servers int) error {
	logger.Info(fmt.Sprintf("serving %d tool(s) of %d server(s) over stdio", tools, servers))
	err := f.Run(ctx, &mcp.IOTransport{Reader: os.Stdin, Writer: nopCloser{stdout}})
	if err == nil || ctx.Err() == nil {
		logger.Info("the client disconnected; stopping every server")
	}
	return err
}

// httpServing is what serveHTTP serves besides the front: the probes.
type httpServing struct {
	health   *health.Checker
	stopping *time.Time // set when a signal starts the shutdown
	rule     *access.Rule
	tls      *tls.Config // nil: plain HTTP
	opts     front.HTTPOptions
	callback *signin.Redirects // served at callbackPath, outside rule; nil: none
}

// orNever maps a flag's 0 ("never") to front's negative.
func orNever(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// serveHTTP serves f on ln until ctx is done, with /healthz and /readyz
// beside the MCP endpoint. At shutdown it turns /readyz to 503, ends every
// open stream (a client's GET stream would otherwise hold the shutdown
// until its timeout) and closes what is left after shutdownWait.
func serveHTTP(ctx context.Context, f *front.Front, ln net.Listener, logger *slog.Logger, o httpServing) error {
	f.Update() // the first client's tools/list is complete
	// /healthz is outside the access rule; /readyz names the servers, so it
	// is behind it, with the MCP endpoint.
	inner := http.NewServeMux()
	inner.Handle(health.ReadyPath, o.health.Ready())
	inner.Handle("/", f.HTTPHandler(o.opts))
	mux := http.NewServeMux()
	mux.Handle(health.LivePath, o.health.Live())
	if o.callback != nil {
		mux.Handle("GET "+callbackPath, o.callback)
	}
	mux.Handle("/", o.rule.Wrap(inner))
	// Every request's context ends when streams must: at shutdown.
	streams, endStreams := context.WithCancel(context.WithoutCancel(ctx))
	defer endStreams()
	srv := access.NewServer(mux, access.ServerOptions{TLSConfig: o.tls, Uncapped: []string{health.LivePath}})
	srv.BaseContext = func(net.Listener) context.Context { return streams }
	syncCtx, stopSync := context.WithCancel(ctx)
	synced := make(chan struct{})
	go func() {
		defer close(synced)
		f.Sync(syncCtx)
	}()
	served := make(chan error, 1)
	scheme := "http"
	if o.tls != nil {
		scheme = "https"
	}
	go func() {
		if o.tls != nil {
			served <- srv.ServeTLS(ln, "", "")
			return
		}
		served <- srv.Serve(ln)
	}()
	logger.Info("serving MCP over Streamable HTTP at " + scheme + "://" + ln.Addr().String() + "/mcp")
	var err error
	select {
	case <-ctx.Done():
		logger.Info(fmt.Sprintf("%v: draining (readyz answers 503), ending open streams and stopping every server", context.Cause(ctx)))
		*o.stopping = time.Now()
	case err = <-served:
	}
	o.health.Drain()
	endStreams()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownWait)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil {
		srv.Close() // requests that did not end in time
	}
	// The clients' own instances close with them, each bounded by its
	// close barrier; what is left the host stops with the servers.
	fctx, fcancel := context.WithTimeout(context.Background(), shutdownWait)
	defer fcancel()
	if ferr := f.Close(fctx); ferr != nil {
		logger.Warn("clients' instances still closing at shutdown; the host stops them: " + ferr.Error())
	}
	if err == nil {
		if err = <-served; errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
	}
	stopSync()
	<-synced
	return err
}

// shutdownWait bounds how long requests in flight may take to end at
// shutdown, once their streams are told to.
const shutdownWait = 500 * time.Millisecond

// nopCloser lets the command's stdout be an mcp.IOTransport writer
// without closing it.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
