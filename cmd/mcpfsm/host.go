package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/metrics"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// started is one server after conn.Start.
type started struct {
	srv    config.Server
	sup    *conn.Supervisor // nil when Start failed
	err    error            // Start's, then Ready's error
	stderr *tailWriter
}

// startOptions are what the commands vary.
type startOptions struct {
	logger       *slog.Logger
	onTransition func(conn.Transition)
	client       *mcp.ClientOptions // nil: the SDK's defaults
	// clientFor, if set, gives each server its own client options in place
	// of client; catalog and roots, if set, give every server the catalog
	// and its first roots.
	clientFor func(server string) *mcp.ClientOptions
	// middlewareFor, if set, gives each server's clients receiving
	// middleware (conn.Config.ClientMiddleware).
	middlewareFor func(server string) []mcp.Middleware
	catalog       *conn.Catalog
	roots         func() []*mcp.Root //lint:ignore SA1019 roots are deprecated upstream (SEP-2577) but still forwarded.
	metrics       *metrics.Metrics   // measures every supervisor, when set
}

// startAll starts every server concurrently on reg. With
// FailOnStartupError a server's Start waits for its first attempt, bounded
// by ctx.
func startAll(ctx context.Context, servers []config.Server, reg conn.Registry, o startOptions) []*started {
	out := make([]*started, len(servers))
	var wg sync.WaitGroup
	for i, srv := range servers {
		st := &started{srv: srv, stderr: newTailWriter(o.logger, srv.Name, 20)}
		out[i] = st
		wg.Go(func() {
			c := srv.Conn(st.stderr)
			c.Registry, c.Logger, c.OnTransition, c.Client = reg, o.logger, o.onTransition, o.client
			if o.clientFor != nil {
				c.Client = o.clientFor(srv.Name)
			}
			if o.middlewareFor != nil {
				c.ClientMiddleware = o.middlewareFor(srv.Name)
			}
			c.Catalog = o.catalog
			if o.roots != nil {
				c.Roots = o.roots()
			}
			if o.metrics != nil {
				st.sup, st.err = o.metrics.Start(ctx, c)
			} else {
				st.sup, st.err = conn.Start(ctx, c)
			}
		})
	}
	wg.Wait()
	return out
}

// waitReady waits, at most timeout, for the first attempt of every started
// server, and records its error.
func waitReady(ctx context.Context, all []*started, timeout time.Duration) {
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
					err = fmt.Errorf("mcp server %q: not connected within %v (state %s)", st.srv.Name, timeout, s.State)
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

// closeBound is how long closing every server may take: the longest close
// barrier plus a margin for the sessions to wind down.
func closeBound(servers []config.Server) time.Duration {
	longest := conn.DefaultCloseTimeout
	for _, s := range servers {
		longest = max(longest, s.CloseTimeout)
	}
	return longest + 5*time.Second
}

// closeAll closes every supervisor concurrently, bounded by closeBound or
// the end of ctx's hurry context (a second interrupt), and returns their
// errors (naming the server). Either way every server process is killed:
// a Close that gives up kills.
func closeAll(ctx context.Context, all []*started) error {
	var servers []config.Server
	for _, st := range all {
		servers = append(servers, st.srv)
	}
	ctx, cancel := context.WithTimeout(hurryOf(ctx), closeBound(servers))
	defer cancel()
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, st := range all {
		if st.sup == nil {
			continue
		}
		wg.Go(func() {
			if err := st.sup.Close(ctx); err != nil {
				errs[i] = fmt.Errorf("close %s: %w", st.srv.Name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// reportFailures prints the error (and the last stderr lines) of every
// server that did not come up, and reports whether there was one.
func reportFailures(w io.Writer, cmd string, all []*started) bool {
	failed := false
	for _, st := range all {
		if st.err == nil {
			continue
		}
		failed = true
		fmt.Fprintf(w, "mcpfsm %s: server %s: %v\n", cmd, st.srv.Name, st.err)
		if lines := st.stderr.Tail(); len(lines) > 0 {
			fmt.Fprintf(w, "  last lines of its stderr:\n")
			for _, l := range lines {
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
	}
	return failed
}

// printTools writes one line per tool: public name, server, first line of
// the description.
func printTools(w io.Writer, tools []conn.Tool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tSERVER\tDESCRIPTION")
	for _, t := range tools {
		desc := ""
		if t.Raw != nil {
			desc, _, _ = strings.Cut(strings.TrimSpace(t.Raw.Description), "\n")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, t.Server, strings.TrimSpace(desc))
	}
	tw.Flush()
}

// tailWriter receives a server's stderr: it logs each line at debug level
// and keeps the last few for error reports. It is safe for concurrent use.
type tailWriter struct {
	logger *slog.Logger
	server string
	keep   int

	mu      sync.Mutex
	partial []byte
	lines   []string
}

func newTailWriter(logger *slog.Logger, server string, keep int) *tailWriter {
	return &tailWriter{logger: logger, server: server, keep: keep}
}

// maxLine bounds a buffered partial line.
const maxLine = 4096

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.line(string(bytes.TrimRight(w.partial[:i], "\r")))
		w.partial = w.partial[i+1:]
	}
	if len(w.partial) > maxLine {
		w.line(string(w.partial[:maxLine]) + "...")
		w.partial = w.partial[:0]
	}
	return len(p), nil
}

func (w *tailWriter) line(s string) {
	w.logger.Debug("server stderr: "+s, "server", w.server)
	w.lines = append(w.lines, s)
	if len(w.lines) > w.keep {
		w.lines = w.lines[len(w.lines)-w.keep:]
	}
}

// Tail returns the last lines written.
func (w *tailWriter) Tail() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.lines...)
}

// newLogger builds the slog logger of -log-format and -log-level.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("-log-format %q: use text or json", format)
}

// syncWriter serialises writes to w: the supervisors, the stderr copiers
// and the commands all write to the same stream.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// warnTiming warns about a stdio server whose closeTimeoutMs is too short
// for the shutdown schedule: its grace periods are then shortened.
func warnTiming(w io.Writer, s config.Server) {
	if s.Type != config.TypeStdio {
		return
	}
	closeTimeout := cmp.Or(s.CloseTimeout, conn.DefaultCloseTimeout)
	if g := conn.GracePeriod(conn.DefaultTerminateDuration, closeTimeout); g < conn.DefaultTerminateDuration {
		fmt.Fprintf(w, "%s: warning: closeTimeoutMs %d is shorter than the stdio shutdown schedule (close stdin, %v, SIGTERM, %v, SIGKILL); the grace periods are shortened to %v so that the server is still killed within it\n",
			s.Name, closeTimeout.Milliseconds(), conn.DefaultTerminateDuration, conn.DefaultTerminateDuration, g)
	}
}
