package e2e_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// portServer is a Streamable HTTP MCP server on a fixed loopback port that
// can be killed (the port refuses connections), started again on the same
// port with a fresh server that knows none of the old sessions, and
// frozen (requests hang, as a SIGSTOPped process's would).
type portServer struct {
	t         *testing.T
	addr      string
	stateless bool

	mu     sync.Mutex
	srv    *http.Server
	mcp    *mcp.Server
	frozen chan struct{}
}

func newPortServer(t *testing.T, stateless bool) *portServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &portServer{t: t, addr: ln.Addr().String(), stateless: stateless}
	p.serve(ln)
	t.Cleanup(p.kill)
	return p
}

func (p *portServer) url() string { return "http://" + p.addr + "/mcp" }

func (p *portServer) serve(ln net.Listener) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "port-fixture", Version: "v1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "returns its text argument"},
		func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: p.stateless})
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		frozen := p.frozen
		p.mu.Unlock()
		if frozen != nil {
			select {
			case <-frozen:
			case <-r.Context().Done():
				return
			}
		}
		h.ServeHTTP(w, r)
	})}
	p.mu.Lock()
	p.srv, p.mcp = hs, srv
	p.mu.Unlock()
	go func() { _ = hs.Serve(ln) }()
}

// kill closes the listener and every connection, and ends the server's
// sessions, as a dying process would: the port refuses.
func (p *portServer) kill() {
	p.mu.Lock()
	srv, ms := p.srv, p.mcp
	p.srv, p.mcp = nil, nil
	if p.frozen != nil {
		close(p.frozen)
		p.frozen = nil
	}
	p.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
	if ms != nil {
		closeSessions(ms)
	}
}

// start serves a fresh server on the same port.
func (p *portServer) start() {
	var ln net.Listener
	var err error
	for range 50 { // the port was just released; it is ours again at once on Linux
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
	}
	if err != nil {
		p.t.Fatalf("listen again on %s: %v", p.addr, err)
	}
	p.serve(ln)
}

func (p *portServer) freeze() (thaw func()) {
	c := make(chan struct{})
	p.mu.Lock()
	p.frozen = c
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			if p.frozen == c {
				close(c)
				p.frozen = nil
			}
			p.mu.Unlock()
		})
	}
}

// TestHTTPMatrix: Streamable HTTP servers of both eras (classic, stateful;
// 2026-07-28, stateless) recover from a kill (the port refuses, then a new
// server on the same port), a hang (requests never answered) and a restart
// on the same port: the loss is reported within two liveness intervals,
// tools are identical afterwards and calls work.
func TestHTTPMatrix(t *testing.T) {
	const every = 150 * time.Millisecond
	for _, era := range []struct {
		name      string
		stateless bool
		pin       string
		protocol  string
	}{
		{"classic", false, conn.ClassicProtocolVersion, conn.ClassicProtocolVersion},
		{"2026", true, "", conn.DefaultProtocolVersion},
	} {
		for _, fault := range []string{"kill", "hang", "restart"} {
			t.Run(era.name+"/"+fault, func(t *testing.T) {
				t.Parallel()
				p := newPortServer(t, era.stateless)
				e := &env{t: t, reg: conn.NewRegistry(), rec: conntest.NewRecorder(), starts: newStarts()}
				tr := conn.Streamable(p.url())
				tr.Client = &http.Client{Transport: &http.Transport{}}
				t.Cleanup(tr.Client.CloseIdleConnections)
				sup := e.start(conn.Config{Transport: tr, Reconnect: fast(100), KeepAlive: every, ProtocolVersion: era.pin})
				e.rec.Await(t, wait, conn.Established)
				if got := sup.Status().Protocol; got != era.protocol {
					t.Fatalf("negotiated %q, want %q", got, era.protocol)
				}
				before := sup.Status().Tools
				hit := time.Now()
				switch fault {
				case "kill":
					p.kill()
				case "hang":
					defer p.freeze()()
				case "restart":
					p.kill()
					p.start()
				}
				lost := e.rec.Await(t, wait, conn.LostReconnecting)
				took := time.Since(hit)
				t.Logf("%s: lost after %v: %v", fault, took, lost.Err)
				if limit := 2*every + slack; took > limit {
					t.Errorf("loss reported %v after the %s, want within %v (2 x KeepAlive + scheduling)", took, fault, limit)
				}
				var lerr *conn.LostError
				if !errors.As(lost.Err, &lerr) {
					t.Errorf("loss carries %T %v, want a *conn.LostError", lost.Err, lost.Err)
				}
				switch fault {
				case "kill":
					p.start()
				case "hang":
					p.kill()
					p.start()
				}
				e.rec.AwaitState(t, wait, sup, conn.Established)
				if after := sup.Status().Tools; !slices.Equal(after, before) {
					t.Errorf("tools after recovery %v, want %v", after, before)
				}
				e.mustEcho("after the " + fault)
			})
		}
	}
}
