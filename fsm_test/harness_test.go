package fsm_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// waitLimit bounds every wait for an event. Tests never sleep: they wait
// for the supervisor to report, and fail if it does not within this limit.
const waitLimit = 10 * time.Second

// behaviour is what the in-memory server does when a generation connects.
type behaviour string

const (
	accept behaviour = "accept" // serve MCP
	refuse behaviour = "refuse" // the transport cannot be opened
	hang   behaviour = "hang"   // read requests, never answer
	held   behaviour = "held"   // serve MCP; the transport is released only when the test says so
	// heldRefuse fails to initialize; the transport is released only when the test says so.
	heldRefuse behaviour = "held-refuse"
)

// heldTransport is a transport with a close signal the test controls, like a
// server process that may or may not exit.
type heldTransport struct {
	mcp.Transport
	release    chan struct{} // closed by the test: the "process" exited
	terminated chan struct{} // closed when the supervisor asks it to stop
	once       sync.Once
}

func newHeld(t mcp.Transport) *heldTransport {
	return &heldTransport{Transport: t, release: make(chan struct{}), terminated: make(chan struct{})}
}

func (t *heldTransport) Terminate() <-chan struct{} {
	t.once.Do(func() { close(t.terminated) })
	return t.release
}

// failingTransport fails to connect.
type failingTransport struct{}

func (failingTransport) Connect(context.Context) (mcp.Connection, error) {
	return nil, errors.New("initialize refused")
}

// logLine is one captured log record, reduced to what tests compare.
type logLine struct {
	Level slog.Level
	Msg   string
}

type recorder struct {
	mu    sync.Mutex
	lines []logLine
	attrs []map[string]string
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorder) WithGroup(string) slog.Handler            { return r }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	attrs := map[string]string{}
	rec.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, logLine{rec.Level, rec.Message})
	r.attrs = append(r.attrs, attrs)
	return nil
}

// linesAtLeast returns the captured lines at or above level.
func (r *recorder) linesAtLeast(level slog.Level) []logLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []logLine
	for _, l := range r.lines {
		if l.Level >= level {
			out = append(out, l)
		}
	}
	return out
}

// harness runs one supervisor against an in-memory go-sdk server on a mock
// clock.
type harness struct {
	t     *testing.T
	clk   *clock.Mock
	srv   *mcp.Server
	reg   *conn.ToolRegistry
	sup   *conn.Supervisor
	trans chan conn.Transition
	log   *recorder
	seen  []conn.Transition

	mu       sync.Mutex
	plan     []behaviour // per opened generation; the last entry repeats
	opens    int
	sessions []*mcp.ServerSession
	pipes    []net.Conn // the server ends of the generations' connections
	opened   chan int   // generation numbers as the transport is opened
	helds    chan *heldTransport
	gate     chan struct{} // when set, tools/list waits until it is closed
	entered  chan struct{} // a tools/list reached the gate
	regs     chan string   // public names as they are registered
}

// signalRegistry wraps a registry and reports every registration.
type signalRegistry struct {
	*conn.ToolRegistry
	regs chan string
}

func (r signalRegistry) Register(t conn.Tool) (func(), error) {
	un, err := r.ToolRegistry.Register(t)
	if err == nil {
		r.regs <- t.Name
	}
	return un, err
}

type option func(*conn.Config)

func withPolicy(p policy.Policy) option { return func(c *conn.Config) { c.Reconnect = &p } }
func strict() option                    { return func(c *conn.Config) { c.FailOnStartupError = true } }

func newHarness(t *testing.T, plan []behaviour, tools []string, opts ...option) *harness {
	t.Helper()
	h := &harness{
		t:       t,
		clk:     clock.NewMock(),
		srv:     mcp.NewServer(&mcp.Implementation{Name: "fixture", Version: "v1"}, nil),
		reg:     conn.NewRegistry(),
		trans:   make(chan conn.Transition, 1000),
		log:     &recorder{},
		plan:    plan,
		opened:  make(chan int, 1000),
		helds:   make(chan *heldTransport, 100),
		regs:    make(chan string, 100000),
		entered: make(chan struct{}, 100),
	}
	h.srv.AddReceivingMiddleware(h.gateList)
	for _, name := range tools {
		h.addTool(name)
	}
	cfg := conn.Config{
		Name:         "fx",
		Transport:    conn.TransportFunc(h.open),
		Registry:     signalRegistry{h.reg, h.regs},
		Clock:        h.clk,
		Logger:       slog.New(h.log),
		OnTransition: func(tr conn.Transition) { h.trans <- tr },
	}
	for _, o := range opts {
		o(&cfg)
	}
	sup, err := conn.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	h.sup = sup
	t.Cleanup(func() { h.close() })
	return h
}

// gateList holds tools/list requests at the gate, if one is set.
func (h *harness) gateList(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/list" {
			h.mu.Lock()
			gate := h.gate
			h.mu.Unlock()
			if gate != nil {
				h.entered <- struct{}{}
				select {
				case <-gate:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
		}
		return next(ctx, method, req)
	}
}

// holdLists makes every tools/list wait until the returned release is
// called (the test's cleanup calls it too).
func (h *harness) holdLists() (release func()) {
	gate := make(chan struct{})
	h.mu.Lock()
	h.gate = gate
	h.mu.Unlock()
	var once sync.Once
	release = func() {
		once.Do(func() {
			h.mu.Lock()
			h.gate = nil
			h.mu.Unlock()
			close(gate)
		})
	}
	h.t.Cleanup(release)
	return release
}

// waitListEntered waits until a tools/list request reached the gate.
func (h *harness) waitListEntered() {
	h.t.Helper()
	select {
	case <-h.entered:
	case <-time.After(waitLimit):
		h.t.Fatalf("no tools/list reached the gate within %v", waitLimit)
	}
}

// Replace signals every tool the supervisor swaps in.
func (r signalRegistry) Replace(old, next []conn.Tool) ([]func(), error) {
	uns, err := r.ToolRegistry.Replace(old, next)
	if err == nil {
		for _, t := range next {
			r.regs <- t.Name
		}
	}
	return uns, err
}

// nextHeld waits for the next held transport to be opened.
func (h *harness) nextHeld() *heldTransport {
	h.t.Helper()
	select {
	case ht := <-h.helds:
		return ht
	case <-time.After(waitLimit):
		h.t.Fatalf("no held transport opened within %v", waitLimit)
		return nil
	}
}

// waitRegistered waits until a tool with the public name is registered.
func (h *harness) waitRegistered(name string) {
	h.t.Helper()
	deadline := time.After(waitLimit)
	for {
		select {
		case got := <-h.regs:
			if got == name {
				return
			}
		case <-deadline:
			h.t.Fatalf("tool %q not registered within %v; registered: %v", name, waitLimit, h.toolNames())
		}
	}
}

// noTransition fails if a transition is pending right now.
func (h *harness) noTransition() {
	h.t.Helper()
	select {
	case tr := <-h.trans:
		h.t.Fatalf("unexpected transition %s -> %s (%s)", tr.From, tr.To, tr.Event)
	default:
	}
}

func (h *harness) addTool(name string) {
	h.srv.AddTool(&mcp.Tool{Name: name, Description: "echo " + name, InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ok"}}}, nil
		})
}

// open is the supervisor's transport: each call is a new generation.
func (h *harness) open(ctx context.Context) (mcp.Transport, error) {
	h.mu.Lock()
	b := h.plan[min(h.opens, len(h.plan)-1)]
	h.opens++
	n := h.opens
	h.mu.Unlock()
	h.opened <- n
	switch b {
	case refuse:
		return nil, fmt.Errorf("generation %d refused", n)
	case heldRefuse:
		ht := newHeld(failingTransport{})
		h.helds <- ht
		return ht, nil
	case hang:
		c1, c2 := net.Pipe()
		go func() { _, _ = io.Copy(io.Discard, c2); c2.Close() }()
		return &mcp.IOTransport{Reader: c1, Writer: c1}, nil
	}
	// A pipe of our own rather than mcp.NewInMemoryTransports, so that a
	// crash can cut it like a dying process, without the server's graceful
	// Close waiting for its in-flight requests.
	c1, c2 := net.Pipe()
	var ct mcp.Transport = &mcp.IOTransport{Reader: c1, Writer: c1}
	ss, err := h.srv.Connect(ctx, &mcp.IOTransport{Reader: c2, Writer: c2}, nil)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.sessions = append(h.sessions, ss)
	h.pipes = append(h.pipes, c2)
	h.mu.Unlock()
	if b == held {
		ht := newHeld(ct)
		h.helds <- ht
		return ht, nil
	}
	return ct, nil
}

// crash cuts the newest server's connection, as a dying server would.
func (h *harness) crash() {
	h.mu.Lock()
	p := h.pipes[len(h.pipes)-1]
	h.mu.Unlock()
	_ = p.Close()
}

// next waits for the next transition.
func (h *harness) next() conn.Transition {
	h.t.Helper()
	select {
	case tr := <-h.trans:
		h.seen = append(h.seen, tr)
		return tr
	case <-time.After(waitLimit):
		h.t.Fatalf("no transition within %v; seen %v; state %s", waitLimit, path(h.seen), h.sup.State())
		return conn.Transition{}
	}
}

// expect waits for transitions into the given states, in order.
func (h *harness) expect(states ...conn.State) []conn.Transition {
	h.t.Helper()
	var got []conn.Transition
	for _, want := range states {
		tr := h.next()
		got = append(got, tr)
		if tr.To != want {
			h.t.Fatalf("transition %d: got %s -> %s (%s), want -> %s; seen %v", len(h.seen), tr.From, tr.To, tr.Event, want, path(h.seen))
		}
	}
	return got
}

// advance moves the mock clock.
func (h *harness) advance(d time.Duration) { h.clk.Add(d) }

// waitOpened waits until the n-th generation's transport was opened.
func (h *harness) waitOpened() int {
	h.t.Helper()
	select {
	case n := <-h.opened:
		return n
	case <-time.After(waitLimit):
		h.t.Fatalf("no transport opened within %v", waitLimit)
		return 0
	}
}

func (h *harness) close() {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.sup.Close(ctx); err != nil && !errors.Is(err, conn.ErrIncompleteShutdown) {
		h.t.Errorf("Close: %v", err)
	}
	// A transport the supervisor opened but abandoned before connecting
	// (disposal raced the attempt) leaves its in-memory server side
	// waiting: the test owns those server sessions and ends them.
	h.mu.Lock()
	sessions, pipes := h.sessions, h.pipes
	h.mu.Unlock()
	for _, p := range pipes {
		_ = p.Close()
	}
	for _, ss := range sessions {
		_ = ss.Close()
	}
}

// toolNames returns the registry's public tool names.
func (h *harness) toolNames() []string {
	var names []string
	for _, t := range h.reg.Tools() {
		names = append(names, t.Name)
	}
	return names
}

func path(trs []conn.Transition) string {
	var b strings.Builder
	for i, tr := range trs {
		if i == 0 {
			b.WriteString(string(tr.From))
		}
		b.WriteString(" -" + string(tr.Event) + "-> " + string(tr.To))
	}
	return b.String()
}
