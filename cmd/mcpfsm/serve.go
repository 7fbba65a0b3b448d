package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/front"
	"github.com/mcpfsm/mcpfsm/health"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const serveUsage = `Usage: mcpfsm serve -config FILE [-listen ADDR] [-http ADDR [-http-token TOKEN]] [-timeout 10s] [-log-format text|json] [-log-level info]

Supervises every server of FILE and serves all their tools, resources
and prompts as one MCP server: over stdin and stdout by default, so that
an MCP host starts it like any stdio server, or over Streamable HTTP at
ADDR with -listen.
Replace the servers of your host's config with one entry:

  {"mcpServers": {"mcpfsm": {"command": "mcpfsm", "args": ["serve", "-config", "/path/to/servers.json"]}}}

Tools keep their public names, mcp__<server>__<tool>. When the set of
tools changes (a server came up, or gave up), the client gets
notifications/tools/list_changed; a reconnect that lists the same tools
sends nothing. A call made while its server is down is answered at once
with a tool error (isError) such as
  server "fs": connection lost; reconnecting in 2s (attempt 3/10); tool "mcp__fs__read" was not called; try again after the next attempt

Resources, resource templates and prompts are served too: prompts as
mcp__<server>__<prompt>, resources under their servers' URIs; a URI that
two servers list is the first's (by name), the other's copy is listed as
mcpfsm:<server>/<uri>. Reads, prompts, completions and subscriptions go
to the right server; the client's roots become every server's roots.

Elicitation, sampling and roots requests of the servers are forwarded to
the client when it declared the capability (on protocol 2025-11-25 and
older).

Before serving, serve waits (at most -timeout) for every server's first
connection attempt, so the first tools/list has their tools; servers
that are still down come later, with a tools/list_changed.

Over stdio, serve ends when its client disconnects (closes stdin), after
stopping every server. With -listen it serves until SIGINT or SIGTERM.
Logs go to stderr, never to stdout.
` + consoleHelp + startFlagsHelp + `
Examples:
  mcpfsm serve -config ~/.cursor/mcp.json
  mcpfsm serve -config .vscode/mcp.json -listen 127.0.0.1:8808
`

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("serve", serveUsage, stderr)
	hf := addHostFlags(fs, "serve", "info")
	listen := fs.String("listen", "", "serve Streamable HTTP at `ADDR` (such as 127.0.0.1:8808) instead of stdio")
	timeout := fs.Duration("timeout", 10*time.Second, "how long to wait for the servers' first attempts before serving")
	names := front.NamesPrefixed
	fs.Var(&names, "names", "tool and prompt names: `prefixed` (mcp__<server>__<name>) or raw (the servers' own; a shared name stays prefixed for the later server)")
	cf := addConsoleFlags(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageErr(stderr, "serve", "unexpected argument %q", fs.Arg(0))
	}
	if *timeout <= 0 {
		return usageErr(stderr, "serve", "-timeout must be positive")
	}
	logger, cfg, stderr, code := hf.load(stderr)
	if cfg == nil {
		return code
	}
	var ln net.Listener
	if *listen != "" {
		var err error
		if ln, err = net.Listen("tcp", *listen); err != nil {
			fmt.Fprintf(stderr, "mcpfsm serve: -listen %s: %v\n", *listen, err)
			return exitFail
		}
	}

	cln, token, err := cf.listen()
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		fmt.Fprintf(stderr, "mcpfsm serve: -http: %v\n", err)
		return exitFail
	}

	reg, cat := conn.NewRegistry(), conn.NewCatalog()
	fl := &fleet{path: *hf.path, reg: reg}
	f := front.New(front.Options{Registry: reg, Catalog: cat, Logger: logger,
		Status: fl.status, Supervisor: fl.supervisor, Supervisors: fl.supervisors, Names: names,
		Implementation: &mcp.Implementation{Name: "mcpfsm", Version: version()}})
	hc, err := newHostConsole(fl, cln, token, reg, logger)
	if err != nil {
		fmt.Fprintf(stderr, "mcpfsm serve: -http: %v\n", err)
		return exitFail
	}
	defer hc.stop()
	fl.opts = startOptions{logger: logger, metrics: hc.metrics, clientFor: f.ClientOptionsFor, middlewareFor: f.ClientMiddlewareFor, catalog: cat,
		//lint:ignore SA1019 roots are deprecated upstream (SEP-2577) but still forwarded.
		roots:        func() []*mcp.Root { r, _ := f.Roots(); return r },
		onTransition: func(t conn.Transition) { f.Observe(t); hc.record(t) }}
	all := start(ctx, cfg.Servers, reg, fl.opts, *timeout)
	fl.set(all)
	stopConsole := func() {}
	var stopping time.Time // when a signal started the shutdown
	code = exitOK
	for _, st := range all {
		if st.sup == nil || st.err != nil && st.srv.FailOnStartupError {
			code = exitFail
		}
	}
	if code != exitOK {
		reportFailures(stderr, "serve", all)
	} else {
		for _, st := range all {
			if st.err != nil {
				logger.Warn("not connected yet; serving without its tools until it comes up", "server", st.srv.Name, "err", st.err)
			}
		}
		// The console and SIGHUP reloads run while the front serves, and
		// stop before the servers are closed.
		hctx, stopHC := context.WithCancel(ctx)
		hcDone := make(chan struct{})
		go func() {
			defer close(hcDone)
			hc.run(hctx)
		}()
		stopConsole = func() {
			stopHC()
			<-hcDone
		}
		if ln != nil {
			err = serveHTTP(ctx, f, ln, logger, httpServing{health: health.New(fl.health), stopping: &stopping})
		} else {
			// A client that goes away closes the pipe serve writes to. By
			// default that write kills a Go program with SIGPIPE, which
			// would orphan every server; caught, it fails with EPIPE and
			// serve shuts down in order. (Caught, not ignored: an ignored
			// signal would stay ignored in the servers started later.)
			sigpipe := make(chan os.Signal, 1)
			signal.Notify(sigpipe, syscall.SIGPIPE)
			defer signal.Stop(sigpipe)
			logger.Info(fmt.Sprintf("serving %d tool(s) of %d server(s) over stdio", len(reg.Tools()), len(all)))
			err = f.Run(ctx, &mcp.IOTransport{Reader: os.Stdin, Writer: nopCloser{stdout}})
			if err == nil || ctx.Err() == nil {
				logger.Info("the client disconnected; stopping every server")
			}
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
	if err := fl.closeEvery(ctx); err != nil {
		fmt.Fprintf(stderr, "mcpfsm serve: %v\n", err)
		code = exitFail
	}
	if !stopping.IsZero() {
		logger.Info("stopped", "took", time.Since(stopping).Round(time.Millisecond))
	}
	return code
}

// httpServing is what serveHTTP serves besides the front: the probes.
type httpServing struct {
	health   *health.Checker
	stopping *time.Time // set when a signal starts the shutdown
}

// serveHTTP serves f on ln until ctx is done, with /healthz and /readyz
// beside the MCP endpoint. At shutdown it turns /readyz to 503, ends every
// open stream (a client's GET stream would otherwise hold the shutdown
// until its timeout) and closes what is left after shutdownWait.
func serveHTTP(ctx context.Context, f *front.Front, ln net.Listener, logger *slog.Logger, o httpServing) error {
	f.Update() // the first client's tools/list is complete
	mux := http.NewServeMux()
	mux.Handle(health.LivePath, o.health.Live())
	mux.Handle(health.ReadyPath, o.health.Ready())
	mux.Handle("/", f.Handler())
	// Every request's context ends when streams must: at shutdown.
	streams, endStreams := context.WithCancel(context.WithoutCancel(ctx))
	defer endStreams()
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return streams }}
	syncCtx, stopSync := context.WithCancel(ctx)
	synced := make(chan struct{})
	go func() {
		defer close(synced)
		f.Sync(syncCtx)
	}()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	logger.Info("serving MCP over Streamable HTTP at http://" + ln.Addr().String() + "/mcp")
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
