package e2e_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpServer is an in-process Streamable HTTP MCP server on a loopback
// httptest.Server. restart replaces the handler behind the listener with a
// fresh one that knows none of the old sessions, as a restarted server (or
// another replica behind a load balancer) would.
type httpServer struct {
	t   *testing.T
	srv *httptest.Server
	cur atomic.Pointer[incarnation]

	mu    sync.Mutex
	all   []*incarnation
	posts map[string]int // HTTP method -> requests served, for the log

	stateless bool                          // serve protocol 2026-07-28 (go-sdk serves it only stateless)
	frozen    atomic.Pointer[chan struct{}] // while set, requests hang until it is closed
	discovers atomic.Int64                  // server/discover requests received
}

type incarnation struct {
	server  *mcp.Server
	handler http.Handler
}

func newHTTPServer(t *testing.T) *httpServer { return newHTTPServerWith(t, false) }

// newHTTPServerWith is newHTTPServer, stateless (protocol 2026-07-28) or not.
func newHTTPServerWith(t *testing.T, stateless bool) *httpServer {
	t.Helper()
	h := &httpServer{t: t, posts: map[string]int{}, stateless: stateless}
	h.cur.Store(h.incarnation())
	h.srv = httptest.NewServer(h) // listens on 127.0.0.1
	t.Cleanup(h.close)
	return h
}

func (h *httpServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.posts[r.Method]++
	h.mu.Unlock()
	if r.Header.Get("Mcp-Method") == "server/discover" {
		h.discovers.Add(1)
	}
	if frozen := h.frozen.Load(); frozen != nil {
		select {
		case <-*frozen:
		case <-r.Context().Done():
			return
		}
	}
	h.cur.Load().handler.ServeHTTP(w, r)
}

// freeze makes every request from now on hang, as a stopped server's
// would, until thaw is called.
func (h *httpServer) freeze() (thaw func()) {
	c := make(chan struct{})
	h.frozen.Store(&c)
	var once sync.Once
	return func() { once.Do(func() { h.frozen.Store(nil); close(c) }) }
}

func (h *httpServer) incarnation() *incarnation {
	srv := mcp.NewServer(&mcp.Implementation{Name: "http-fixture", Version: "v1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "returns its text argument"},
		func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
		})
	inc := &incarnation{server: srv, handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: h.stateless})}
	h.mu.Lock()
	h.all = append(h.all, inc)
	h.mu.Unlock()
	return inc
}

type echoArgs struct {
	Text string `json:"text"`
}

// restart swaps in a fresh handler. With kill, the old incarnation dies
// too: its sessions are closed (ending their event streams) and every
// client connection is dropped, as when the server process restarts.
// Without it the old incarnation lives on, holding its sessions and their
// open standalone event streams, as a replica behind a load balancer that
// stopped routing to it would.
func (h *httpServer) restart(kill bool) {
	old := h.cur.Swap(h.incarnation())
	if kill {
		closeSessions(old.server)
		h.srv.CloseClientConnections()
	}
}

func closeSessions(s *mcp.Server) {
	for _, ss := range slices.Collect(s.Sessions()) {
		_ = ss.Close()
	}
}

func (h *httpServer) close() {
	h.mu.Lock()
	all := slices.Clone(h.all)
	h.t.Logf("HTTP requests served: %v", h.posts)
	h.mu.Unlock()
	// End every session first: httptest.Server.Close waits for requests
	// in flight, such as a standalone event stream's GET.
	for _, inc := range all {
		closeSessions(inc.server)
	}
	h.srv.CloseClientConnections()
	h.srv.Close() // also closes the idle connections of srv.Client()
}

// transport is the supervisor's HTTP transport, on the server's own
// client so that closing the server leaves no idle connection behind.
func (h *httpServer) transport() *conn.HTTP {
	tr := conn.Streamable(h.srv.URL)
	tr.Client = h.srv.Client()
	return tr
}

// startHTTP supervises the server h with cfg on a fresh env.
func startHTTP(t *testing.T, h *httpServer, cfg conn.Config) *env {
	t.Helper()
	e := &env{t: t, reg: conn.NewRegistry(), rec: conntest.NewRecorder(), starts: newStarts()}
	cfg.Transport = h.transport()
	if cfg.Reconnect == nil {
		cfg.Reconnect = fast(3)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	e.start(cfg)
	e.rec.Await(t, wait, conn.Established)
	if got, want := toolNames(e.reg.Tools()), []string{conn.PublicToolName("fx", "echo")}; !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	e.mustEcho("before")
	return e
}

// awaitRecovery checks the loss and reconnect after a restart, and that
// calls work again.
func awaitRecovery(t *testing.T, e *env, since time.Time) {
	t.Helper()
	lost := e.rec.Await(t, wait, conn.LostReconnecting)
	t.Logf("loss reported %v after the restart: %v", time.Since(since), lost.Err)
	var lerr *conn.LostError
	if !errors.As(lost.Err, &lerr) {
		t.Errorf("loss carries %T %v, want a *conn.LostError", lost.Err, lost.Err)
	}
	e.rec.Await(t, wait, conn.Connecting)
	e.rec.Await(t, wait, conn.Established)
	t.Logf("established again %v after the restart", time.Since(since))
	e.mustEcho("after")
	if n := e.rec.Count(conn.LostReconnecting); n != 1 {
		t.Errorf("%d losses, want 1:\n%s", n, e.rec.Dump())
	}
}

// TestStreamableHTTPRestartRecovers: a Streamable HTTP server that
// restarts and forgets its sessions (404 for the old session ID, which the
// SDK reports as mcp.ErrSessionMissing).
func TestStreamableHTTPRestartRecovers(t *testing.T) {
	// The server restarts and drops its connections: the standalone event
	// stream breaks, the SDK reconnects it (after its own 1-2 s backoff),
	// gets 404 and ends the session. No call is needed to notice.
	// Classic protocol: 2026-07-28 has no session to lose.
	t.Run("idle", func(t *testing.T) {
		h := newHTTPServer(t)
		e := startHTTP(t, h, conn.Config{ProtocolVersion: conn.ClassicProtocolVersion})
		restarted := time.Now()
		h.restart(true)
		awaitRecovery(t, e, restarted)
	})
	// Another handler now answers, but the old one still holds the session
	// and its event stream: only the next request learns of the loss. That
	// call fails; the supervisor reconnects.
	t.Run("revealed-by-call", func(t *testing.T) {
		h := newHTTPServer(t)
		e := startHTTP(t, h, conn.Config{})
		restarted := time.Now()
		h.restart(false)
		_, err := e.call("echo", map[string]any{"text": "into the void"})
		t.Logf("call after the restart: %v", err)
		if err == nil {
			t.Fatal("a call to a forgotten session succeeded")
		}
		if !errors.Is(err, mcp.ErrSessionMissing) {
			t.Errorf("call error %v does not match mcp.ErrSessionMissing", err)
		}
		// The call's own error reveals the loss before the session's Wait
		// does; it is still reported as an outage.
		if !errors.Is(err, conn.ErrUnavailable) {
			t.Errorf("call error %v does not match conn.ErrUnavailable", err)
		}
		awaitRecovery(t, e, restarted)
	})
	// As revealed-by-call, but KeepAlive's next ping learns of the loss
	// before any call is made.
	t.Run("revealed-by-keepalive", func(t *testing.T) {
		h := newHTTPServer(t)
		e := startHTTP(t, h, conn.Config{KeepAlive: 50 * time.Millisecond})
		restarted := time.Now()
		h.restart(false)
		awaitRecovery(t, e, restarted)
	})
}

// TestStreamableHTTPCloseLeavesNothing: Close ends the session on the
// server (DELETE) and leaves no tool registered; goleak (TestMain) checks
// that no client goroutine is left.
func TestStreamableHTTPCloseLeavesNothing(t *testing.T) {
	h := newHTTPServer(t)
	e := startHTTP(t, h, conn.Config{})
	inc := h.cur.Load()
	if n := len(slices.Collect(inc.server.Sessions())); n != 1 {
		t.Fatalf("%d server sessions, want 1", n)
	}
	start := time.Now()
	if err := e.sup.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	t.Logf("Close took %v", time.Since(start))
	if s := e.sup.State(); s != conn.Disposed {
		t.Errorf("state after Close: %s", s)
	}
	if n := len(e.reg.Tools()); n != 0 {
		t.Errorf("%d tools registered after Close", n)
	}
	if n := len(slices.Collect(inc.server.Sessions())); n != 0 {
		t.Errorf("%d server sessions after Close, want 0: the session was not deleted", n)
	}
}
