package console

import (
	"bufio"
	"context"
	"crypto/tls"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/mcpfsm/mcpfsm/access"
	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/health"
)

//go:embed web
var web embed.FS

// Options configure a [Console]. The zero value is usable.
type Options struct {
	// Token, when set, is the bearer token every request must carry
	// (header "Authorization: Bearer TOKEN", or the cookie the page sets
	// after one visit to /?token=TOKEN). Without it the console answers
	// only requests addressed to a loopback host name. Ignored when Rule
	// is set.
	Token string
	// Rule, when set, is the access rule of every request (the one rule of
	// the host's HTTP surfaces); give it Config.Cookie = CookieName for the
	// page's /?token=TOKEN login. Without it the console makes one from
	// Token.
	Rule *access.Rule
	// Metrics, when set, is mounted at /metrics (for example a Prometheus
	// handler); without it /metrics answers 404.
	Metrics http.Handler
	// ToolsChanged, when set, returns a channel closed at the next change
	// of the tool set (conn.ToolRegistry.Changed), so the page's tool
	// counts follow re-syncs that change no state.
	ToolsChanged func() <-chan struct{}
	// HistorySize is how many recent transitions are kept per server;
	// 0 means DefaultHistory.
	HistorySize int
	// Keepalive is the interval at which the event stream repeats the
	// status when nothing changed (keeping proxies from closing it, and
	// uptimes fresh); 0 means 15 s.
	Keepalive time.Duration
	// Clock is the host's clock; nil means the real one. Tests pass the
	// supervisors' clock.Mock.
	Clock clock.Clock
	// Logger receives the console's own errors; nil discards them.
	Logger *slog.Logger
	// TLS, when set, makes [Console.Serve] serve HTTPS with it
	// (access.TLSConfig); the login cookie is then Secure.
	TLS *tls.Config
	// Health, when set, answers /healthz (outside the access rule) and
	// /readyz (behind it).
	Health *health.Checker
	// Callers, when set, returns a server's callers' requests over the
	// last hour (authz.Tally.Counts), shown with the server.
	Callers func(server string) []authz.Count
	// TracePath, when set, is the host's trace file (mcpfsm -trace),
	// offered for download at /api/trace.
	TracePath string
	// Redact, when set, is applied to every answer as it leaves (the JSON
	// of the API and the event stream, each line of /api/trace, /readyz's
	// errors): a registry of the host's secret values, hiding them by
	// value (mcpfsm passes its internal/redact.Secrets' String).
	Redact func(string) string
}

// Console is the operator console of a host: an http.Handler serving the
// status page, the JSON API, the event stream and /metrics. Create it with
// [New], feed it transitions with [Console.Record], and [Console.Close] it
// before shutting its server down (open event streams end then).
type Console struct {
	host    Host
	opts    Options
	clk     clock.Clock
	log     *slog.Logger
	hist    *history
	diagram []byte
	handler http.Handler // the router behind the access rule
	limit   reconnectLimit

	closed    chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// New returns a console for host.
func New(host Host, opts Options) *Console {
	if opts.HistorySize <= 0 {
		opts.HistorySize = DefaultHistory
	}
	if opts.Keepalive <= 0 {
		opts.Keepalive = 15 * time.Second
	}
	c := &Console{
		host: host, opts: opts, clk: opts.Clock, log: opts.Logger,
		hist:    newHistory(opts.HistorySize),
		diagram: []byte(diagramSVG()),
		closed:  make(chan struct{}),
	}
	if c.clk == nil {
		c.clk = clock.New()
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.handler = c.guard(http.HandlerFunc(c.route))
	if opts.ToolsChanged != nil {
		c.wg.Go(c.followTools)
	}
	return c
}

// TLS reports whether [Console.Serve] serves HTTPS.
func (c *Console) TLS() bool { return c.opts.TLS != nil }

// Record adds a transition to its server's recent history and wakes the
// event streams. It never blocks for long, so it can be a supervisor's
// Config.OnTransition (alone, or called from the host's own).
func (c *Console) Record(t conn.Transition) { c.hist.record(t) }

// Follow records every transition received from transitions (for example
// a supervisor's Watch channel) until the channel is closed, ctx ends or
// the console is closed. Run it on a goroutine of its own.
func (c *Console) Follow(ctx context.Context, transitions <-chan conn.Transition) {
	for {
		select {
		case t, ok := <-transitions:
			if !ok {
				return
			}
			c.Record(t)
		case <-ctx.Done():
			return
		case <-c.closed:
			return
		}
	}
}

// Notify wakes the event streams, for changes that are no transition (a
// reload that added or removed servers).
func (c *Console) Notify() { c.hist.notify() }

// Close ends the open event streams and the console's own goroutine. The
// handler keeps answering other requests.
func (c *Console) Close() {
	c.closeOnce.Do(func() { close(c.closed) })
	c.wg.Wait()
}

func (c *Console) followTools() {
	for {
		select {
		case <-c.opts.ToolsChanged():
			c.hist.notify()
		case <-c.closed:
			return
		}
	}
}

// ServeHTTP applies the access rule and routes a request; see the package
// doc for the endpoints.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w.Header())
	if c.opts.Health != nil && r.URL.Path == health.LivePath {
		c.opts.Health.Live().ServeHTTP(w, r)
		return
	}
	c.handler.ServeHTTP(w, r)
}

func (c *Console) route(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/api/trace":
		c.method(w, r, "GET", func() { c.trace(w, r) })
	case p == health.ReadyPath && c.opts.Health != nil:
		c.method(w, r, "GET", func() { c.opts.Health.ReadyDetailed(c.hide).ServeHTTP(w, r) })
	case p == "/" || p == "/index.html":
		c.method(w, r, "GET", func() { c.static(w, r, "web/index.html", "text/html; charset=utf-8") })
	case p == "/app.js":
		c.method(w, r, "GET", func() { c.static(w, r, "web/app.js", "text/javascript; charset=utf-8") })
	case p == "/style.css":
		c.method(w, r, "GET", func() { c.static(w, r, "web/style.css", "text/css; charset=utf-8") })
	case p == "/favicon.svg" || p == "/favicon.ico":
		c.method(w, r, "GET", func() { c.static(w, r, "web/favicon.svg", "image/svg+xml") })
	case p == "/diagram.svg":
		c.method(w, r, "GET", func() {
			w.Header().Set("Content-Type", "image/svg+xml")
			w.Write(c.diagram)
		})
	case p == "/api/status":
		c.method(w, r, "GET", func() { c.writeJSON(w, http.StatusOK, c.report()) })
	case p == "/api/events":
		c.method(w, r, "GET", func() { c.events(w, r) })
	case p == "/api/reconnect":
		c.method(w, r, "POST", func() { c.reconnectAll(w, r) })
	case p == "/api/reload":
		c.method(w, r, "POST", func() { c.reload(w, r) })
	case strings.HasPrefix(p, "/api/servers/"):
		name, action, _ := strings.Cut(strings.TrimPrefix(p, "/api/servers/"), "/")
		switch {
		case name != "" && action == "reconnect":
			c.method(w, r, "POST", func() { c.reconnect(w, r, name) })
		case name != "" && action == "signin":
			c.method(w, r, "POST", func() { c.signIn(w, r, name) })
		default:
			c.writeError(w, http.StatusNotFound, fmt.Sprintf("no endpoint %s; use POST /api/servers/NAME/reconnect or POST /api/servers/NAME/signin", p))
		}
	case p == "/metrics" && c.opts.Metrics != nil:
		c.opts.Metrics.ServeHTTP(w, r)
	default:
		c.writeError(w, http.StatusNotFound, fmt.Sprintf("no endpoint %s; see / for the status page and /api/status for JSON", p))
	}
}

// method runs h if the request's method is allowed (GET also allows
// HEAD), and answers 405 with an Allow header otherwise.
func (c *Console) method(w http.ResponseWriter, r *http.Request, allowed string, h func()) {
	if r.Method == allowed || (allowed == "GET" && r.Method == "HEAD") {
		h()
		return
	}
	allow := allowed
	if allowed == "GET" {
		allow = "GET, HEAD"
	}
	w.Header().Set("Allow", allow)
	c.writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s; use %s", r.Method, r.URL.Path, allowed))
}

func (c *Console) static(w http.ResponseWriter, r *http.Request, name, ctype string) {
	b, err := web.ReadFile(name)
	if err != nil {
		c.writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(b)
}

// ReconnectResult is the body of POST /api/servers/NAME/reconnect, and one
// entry of [ReconnectAllResult].
type ReconnectResult struct {
	Name string `json:"name"`
	// Error is why the attempt failed; empty when the server is connected.
	Error  string       `json:"error,omitempty"`
	Server ServerStatus `json:"server"` // the server's status after the attempt
}

// ReconnectAllResult is the body of POST /api/reconnect.
type ReconnectAllResult struct {
	// Error says how many servers did not reconnect; empty when all did.
	Error   string            `json:"error,omitempty"`
	Results []ReconnectResult `json:"results"` // sorted by name
}

// reconnectOne calls the server's Reconnect and reports its outcome with
// an HTTP status: 200 connected, 409 closed, 502 the attempt failed.
func (c *Console) reconnectOne(ctx context.Context, s Server) (ReconnectResult, int) {
	err := s.Reconnect(ctx)
	st := s.Status()
	res := ReconnectResult{Name: st.Server, Server: serverStatus(st, c.hist.recent(st.Server))}
	code := http.StatusOK
	if err != nil {
		res.Error = err.Error()
		code = http.StatusBadGateway
		if errors.Is(err, conn.ErrClosed) {
			code = http.StatusConflict
		}
		c.log.Warn("console: reconnect failed", "server", st.Server, "err", err)
	}
	return res, code
}

func (c *Console) reconnect(w http.ResponseWriter, r *http.Request, name string) {
	s, ok := c.find(name)
	if !ok {
		c.writeError(w, http.StatusNotFound, fmt.Sprintf("unknown server %q; GET /api/status lists the servers", name))
		return
	}
	if !c.allowManual(w, "server:"+name, fmt.Sprintf("server %q reconnected", name)) {
		return
	}
	res, code := c.reconnectOne(r.Context(), s)
	c.writeJSON(w, code, res)
}

func (c *Console) reconnectAll(w http.ResponseWriter, r *http.Request) {
	if !c.allowManual(w, "all", "all servers reconnected") {
		return
	}
	servers := c.host.Servers()
	out := ReconnectAllResult{Results: make([]ReconnectResult, len(servers))}
	codes := make([]int, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() { out.Results[i], codes[i] = c.reconnectOne(r.Context(), s) })
	}
	wg.Wait()
	slices.SortFunc(out.Results, func(a, b ReconnectResult) int { return strings.Compare(a.Name, b.Name) })
	failed := 0
	for _, code := range codes {
		if code != http.StatusOK {
			failed++
		}
	}
	code := http.StatusOK
	if failed > 0 {
		code = http.StatusBadGateway
		out.Error = fmt.Sprintf("%d of %d servers did not reconnect", failed, len(servers))
	}
	c.writeJSON(w, code, out)
}

func (c *Console) reload(w http.ResponseWriter, r *http.Request) {
	if !c.allowManual(w, "reload", "the config reloaded") {
		return
	}
	err := c.host.Reload(r.Context())
	c.hist.notify()
	switch {
	case errors.Is(err, ErrReloadUnsupported):
		c.writeError(w, http.StatusNotImplemented, err.Error())
	case err != nil:
		c.writeError(w, http.StatusInternalServerError, "reload: "+err.Error())
	default:
		c.writeJSON(w, http.StatusOK, c.report())
	}
}

// events streams the status as Server-Sent Events: one "status" event at
// once, then one after every change (coalesced) and at every keepalive
// interval, until the client goes away or the console is closed.
func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		c.writeError(w, http.StatusInternalServerError, "streaming is not supported by this server")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	tick := c.clk.Ticker(c.opts.Keepalive)
	defer tick.Stop()
	for {
		// Take the channel before the report, so a change made while the
		// report is built wakes the next round.
		changed := c.hist.wait()
		b, err := json.Marshal(c.report())
		if err != nil {
			c.log.Error("console: encoding status", "err", err)
			return
		}
		if _, err := fmt.Fprintf(w, "event: status\ndata: %s\n\n", c.hide(string(b))); err != nil {
			return
		}
		fl.Flush()
		select {
		case <-changed:
		case <-tick.C:
		case <-r.Context().Done():
			return
		case <-c.closed:
			return
		}
	}
}

// apiError is the body of every error answer.
type apiError struct {
	Error string `json:"error"`
}

func (c *Console) writeError(w http.ResponseWriter, code int, msg string) {
	c.writeJSON(w, code, apiError{Error: msg})
}

func (c *Console) writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		c.log.Error("console: encoding a response", "err", err)
		code, b = http.StatusInternalServerError, []byte(`{"error":"encoding the response failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	io.WriteString(w, c.hide(string(b))+"\n")
}

// hide applies Options.Redact.
func (c *Console) hide(s string) string {
	if c.opts.Redact == nil {
		return s
	}
	return c.opts.Redact(s)
}

// trace serves the host's trace file, if it has one.
func (c *Console) trace(w http.ResponseWriter, r *http.Request) {
	if c.opts.TracePath == "" {
		c.writeError(w, http.StatusNotFound, "this host keeps no trace: start it with -trace FILE")
		return
	}
	f, err := os.Open(c.opts.TracePath)
	if err != nil {
		c.writeError(w, http.StatusInternalServerError, "the trace cannot be read: "+err.Error())
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", `attachment; filename="mcpfsm-trace.jsonl"`)
	br := bufio.NewReader(f)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			if _, werr := io.WriteString(w, c.hide(line)); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
