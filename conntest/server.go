// Package conntest helps test code built on package conn: an in-process
// MCP server whose every generation follows a script (serve, refuse, hang,
// hold its close signal, crash), and a Recorder of the transitions and log
// lines a Supervisor reports. With a clock.Mock as Config.Clock, a test
// drives every timing rule deterministically and waits on events, never on
// sleeps.
//
// A typical table test starts a Supervisor with Server.Transport, the
// Recorder's OnTransition and Logger, then runs a script of stimuli
// (Crash, clock advances, Plan changes) and compares Recorder.Seen and
// Recorder.Logs with the expected sequences using go-cmp.
package conntest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Behaviour is what a Server does when a generation opens its transport.
type Behaviour string

// The behaviours a Server can follow.
const (
	// Accept serves MCP.
	Accept Behaviour = "accept"
	// Refuse fails to open the transport.
	Refuse Behaviour = "refuse"
	// Hang reads every request and answers none, like a server stuck
	// before initialize.
	Hang Behaviour = "hang"
	// Held serves MCP over a transport whose close signal (see
	// conn.Terminator) comes only when the test calls Release, like a
	// process that may or may not exit.
	Held Behaviour = "held"
	// HeldRefuse fails to initialize over a held transport.
	HeldRefuse Behaviour = "held-refuse"
	// Missing fails to open the transport as a stdio server whose command
	// is not installed does: with an error matching exec.ErrNotFound,
	// which no wait can fix (conn.ErrPermanent).
	Missing Behaviour = "missing"
	// Busy fails to open the transport as an HTTP server that answers 503
	// with "Retry-After: 60" does: with a *conn.HTTPError whose RetryAfter
	// is BusyRetryAfter.
	Busy Behaviour = "busy"
)

// BusyRetryAfter is the Retry-After of a Busy generation's answer.
const BusyRetryAfter = time.Minute

// Server is an in-process MCP server for supervisor tests. Its MCP field is
// the go-sdk server: add and remove tools on it, and connected sessions see
// list_changed notifications as a real server's would.
type Server struct {
	MCP *mcp.Server

	mu       sync.Mutex
	plan     []Behaviour
	opens    int
	sessions []*mcp.ServerSession
	pipes    []net.Conn
	hung     []net.Conn // server ends of Hang generations
	clients  []*clientConn
	overlaps int
	gate     chan struct{}
	frozen   chan struct{}

	// What the server reports to the test. Pushing never blocks the
	// supervisor under test; Close stops the feeds.
	opened  *feed[int]
	held    *feed[*HeldTransport]
	entered *feed[struct{}]
	stalled *feed[string]
}

// NewServer returns a server that follows plan, one behaviour per opened
// generation; the last one repeats. An empty plan means Accept.
func NewServer(plan ...Behaviour) *Server { return NewServerWithOptions(nil, plan...) }

// NewServerWithOptions is NewServer with the go-sdk server's options, for
// tests that need its handlers (roots list changes, subscriptions, ...).
func NewServerWithOptions(opts *mcp.ServerOptions, plan ...Behaviour) *Server {
	if len(plan) == 0 {
		plan = []Behaviour{Accept}
	}
	s := &Server{
		MCP:     mcp.NewServer(&mcp.Implementation{Name: "conntest", Version: "v1"}, opts),
		plan:    plan,
		opened:  newFeed[int](),
		held:    newFeed[*HeldTransport](),
		entered: newFeed[struct{}](),
		stalled: newFeed[string](),
	}
	s.MCP.AddReceivingMiddleware(s.gateList)
	return s
}

// AddEchoTool adds a tool that answers "<name> ok".
func (s *Server) AddEchoTool(name string) {
	s.MCP.AddTool(&mcp.Tool{Name: name, Description: "echo " + name, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ok"}}}, nil
		})
}

// Transport returns the conn.Transport to supervise the server with.
func (s *Server) Transport() conn.Transport { return conn.TransportFunc(s.open) }

// Plan replaces the behaviour of the generations opened from now on.
func (s *Server) Plan(plan ...Behaviour) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The generations opened so far followed the plan, its last behaviour
	// repeating: spell the repeats out before appending.
	for len(s.plan) < s.opens {
		s.plan = append(s.plan, s.plan[len(s.plan)-1])
	}
	s.plan = append(s.plan[:s.opens:s.opens], plan...)
}

// Opens returns how many transports were opened so far.
func (s *Server) Opens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opens
}

// Opened delivers the number of each generation as its transport opens.
func (s *Server) Opened() <-chan int { return s.opened.C() }

// HeldTransports delivers the transports of Held and HeldRefuse generations.
func (s *Server) HeldTransports() <-chan *HeldTransport { return s.held.C() }

func (s *Server) open(ctx context.Context) (mcp.Transport, error) {
	s.mu.Lock()
	b := s.plan[min(s.opens, len(s.plan)-1)]
	s.opens++
	n := s.opens
	for _, c := range s.clients {
		if !c.closed.Load() {
			s.overlaps++
		}
	}
	s.mu.Unlock()
	s.opened.push(n)
	switch b {
	case Refuse:
		return nil, fmt.Errorf("generation %d refused", n)
	case Missing:
		return nil, fmt.Errorf("generation %d: start conntest-server: %w", n, &exec.Error{Name: "conntest-server", Err: exec.ErrNotFound})
	case Busy:
		return nil, fmt.Errorf("generation %d: %w", n, &conn.HTTPError{StatusCode: http.StatusServiceUnavailable,
			Status: "503 Service Unavailable", Body: "busy", RetryAfter: BusyRetryAfter})
	case HeldRefuse:
		ht := newHeld(failingTransport{})
		s.held.push(ht)
		return ht, nil
	case Hang:
		c1, c2 := s.pipe()
		s.mu.Lock()
		s.hung = append(s.hung, c2)
		s.mu.Unlock()
		go func() { _, _ = io.Copy(io.Discard, c2); c2.Close() }()
		return &pipeTransport{IOTransport: &mcp.IOTransport{Reader: c1, Writer: c1}, c: c1}, nil
	}
	// A pipe of our own rather than mcp.NewInMemoryTransports, so that a
	// crash can cut it like a dying process, without the server's graceful
	// Close waiting for its in-flight requests.
	c1, c2 := s.pipe()
	ss, err := s.MCP.Connect(ctx, &mcp.IOTransport{Reader: c2, Writer: c2}, nil)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.sessions = append(s.sessions, ss)
	s.pipes = append(s.pipes, c2)
	s.mu.Unlock()
	var t mcp.Transport = &pipeTransport{IOTransport: &mcp.IOTransport{Reader: c1, Writer: c1}, c: c1}
	if b == Held {
		ht := newHeld(t)
		s.held.push(ht)
		return ht, nil
	}
	return t, nil
}

// pipe returns a connected pair whose client end records its Close.
func (s *Server) pipe() (*clientConn, net.Conn) {
	c1, c2 := net.Pipe()
	c := &clientConn{Conn: c1}
	s.mu.Lock()
	s.clients = append(s.clients, c)
	s.mu.Unlock()
	return c, c2
}

// Overlaps returns how many times a generation's transport was opened
// while the client side of an earlier generation was still open: the
// in-process counterpart of two server processes alive at once. A
// supervisor's close barrier keeps it at zero.
func (s *Server) Overlaps() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overlaps
}

// pipeTransport is a generation's transport. Like a process, it
// implements conn.Terminator: terminating it cuts the client end of its
// pipe, which is then gone at once. So the supervisor's close barrier
// holds for in-process generations too, and Overlaps stays a check of it
// rather than of how fast a session's Close runs.
type pipeTransport struct {
	*mcp.IOTransport
	c *clientConn
}

var gone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Terminate implements conn.Terminator.
func (t *pipeTransport) Terminate() <-chan struct{} {
	_ = t.c.Close()
	return gone
}

// clientConn is the client end of a generation's pipe.
type clientConn struct {
	net.Conn
	closed atomic.Bool
}

func (c *clientConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

// Crash cuts the newest generation's connection, as a dying server would.
// It does nothing before the first Accept or Held generation.
func (s *Server) Crash() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pipes) > 0 {
		_ = s.pipes[len(s.pipes)-1].Close()
	}
}

// HoldLists makes every tools/list wait until release is called, to test
// what happens while a sync is in flight. ListEntered reports each list
// that reached the hold.
func (s *Server) HoldLists() (release func()) { return s.hold(&s.gate) }

// hold installs a fresh channel in *slot (closing the one it replaces: one
// hold of a kind at a time) and returns the function that closes it, unless
// Close already did.
func (s *Server) hold(slot *chan struct{}) func() {
	c := make(chan struct{})
	s.mu.Lock()
	if *slot != nil {
		close(*slot)
	}
	*slot = c
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if *slot == c {
				*slot = nil
				close(c)
			}
		})
	}
}

// ListEntered delivers a value for every tools/list that reached a hold.
func (s *Server) ListEntered() <-chan struct{} { return s.entered.C() }

// Freeze makes the server stop answering, pings included, while its
// connections stay open: a hung server. Requests wait until thaw is called
// (or their connection ends); Stalled reports each one's method.
func (s *Server) Freeze() (thaw func()) { return s.hold(&s.frozen) }

// Stalled delivers the method of every request that reached a frozen
// server.
func (s *Server) Stalled() <-chan string { return s.stalled.C() }

func (s *Server) gateList(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		s.mu.Lock()
		frozen := s.frozen
		s.mu.Unlock()
		if frozen != nil {
			s.stalled.push(method)
			select {
			case <-frozen:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if method == "tools/list" {
			s.mu.Lock()
			gate := s.gate
			s.mu.Unlock()
			if gate != nil {
				s.entered.push(struct{}{})
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

// Close releases every hold (HoldLists, Freeze), ends every server-side
// session and hung connection, and stops delivering on the channels of
// Opened, HeldTransports, ListEntered and Stalled. Call it after
// the supervisor's Close: a transport the supervisor opened but abandoned
// before connecting it (disposal raced the attempt) cannot be closed by the
// supervisor, since an mcp.Transport has no Close, and otherwise leaves its
// server side waiting.
func (s *Server) Close() {
	s.mu.Lock()
	sessions, pipes := s.sessions, append(s.pipes, s.hung...)
	// A held or frozen request would keep its session's graceful Close
	// waiting: let them all go first.
	for _, c := range []*chan struct{}{&s.gate, &s.frozen} {
		if *c != nil {
			close(*c)
			*c = nil
		}
	}
	s.mu.Unlock()
	for _, p := range pipes {
		_ = p.Close()
	}
	for _, ss := range sessions {
		_ = ss.Close()
	}
	s.opened.stop()
	s.held.stop()
	s.entered.stop()
	s.stalled.stop()
}

// HeldTransport is a transport whose close signal the test controls.
type HeldTransport struct {
	mcp.Transport
	release    chan struct{}
	terminated chan struct{}
	once       sync.Once
	relOnce    sync.Once
}

func newHeld(t mcp.Transport) *HeldTransport {
	return &HeldTransport{Transport: t, release: make(chan struct{}), terminated: make(chan struct{})}
}

// Terminate implements conn.Terminator: it reports that the supervisor
// asked the "process" to stop, and returns the channel Release closes.
func (t *HeldTransport) Terminate() <-chan struct{} {
	t.once.Do(func() { close(t.terminated) })
	return t.release
}

// Terminated is closed once the supervisor asked the transport to stop.
func (t *HeldTransport) Terminated() <-chan struct{} { return t.terminated }

// Release reports the "process" gone. It is idempotent.
func (t *HeldTransport) Release() { t.relOnce.Do(func() { close(t.release) }) }

type failingTransport struct{}

func (failingTransport) Connect(context.Context) (mcp.Connection, error) {
	return nil, errors.New("initialize refused")
}
