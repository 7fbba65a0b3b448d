package console

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
)

// wait bounds every wait for an event in these tests.
const wait = 10 * time.Second

// testHost is a Host running real supervisors of conntest servers on one
// clock.Mock.
type testHost struct {
	t    *testing.T
	clk  *clock.Mock
	reg  *conn.ToolRegistry
	cons *Console

	mu        sync.Mutex
	servers   []*testServer
	reloadErr error
	reloads   int
}

// testServer is one supervised conntest server. Its Reconnect is the
// supervisor's own where conn.Supervisor has one; otherwise it restarts
// the supervisor (Close, then Start with the same Config) and waits for
// the first attempt, which is what a reconnect is, seen from the console.
type testServer struct {
	h          *testHost
	name       string
	srv        *conntest.Server
	rec        *conntest.Recorder
	policy     policy.Policy
	reconnects atomic.Int32

	mu  sync.Mutex
	sup *conn.Supervisor
}

func newTestHost(t *testing.T, opts Options) *testHost {
	t.Helper()
	h := &testHost{t: t, clk: clock.NewMock(), reg: conn.NewRegistry()}
	h.clk.Set(time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC))
	opts.Clock = h.clk
	opts.ToolsChanged = h.reg.Changed
	h.cons = New(h, opts)
	t.Cleanup(func() {
		h.cons.Close()
		for _, s := range h.servers {
			s.mu.Lock()
			sup := s.sup
			s.mu.Unlock()
			if err := sup.Close(context.Background()); err != nil {
				t.Errorf("close %s: %v", s.name, err)
			}
			s.srv.Close()
		}
	})
	return h
}

// add starts a supervised server following plan, with maxAttempts retries
// from 1 s.
func (h *testHost) add(name string, maxAttempts int, plan ...conntest.Behaviour) *testServer {
	h.t.Helper()
	s := &testServer{
		h: h, name: name, srv: conntest.NewServer(plan...), rec: conntest.NewRecorder(),
		policy: policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: 4 * time.Second, MaxAttempts: maxAttempts},
	}
	s.srv.AddEchoTool("echo")
	if err := s.start(); err != nil {
		h.t.Fatal(err)
	}
	h.mu.Lock()
	h.servers = append(h.servers, s)
	h.mu.Unlock()
	return s
}

func (s *testServer) start() error {
	p := s.policy
	sup, err := conn.Start(context.Background(), conn.Config{
		Name: s.name, Transport: s.srv.Transport(), Registry: s.h.reg, Reconnect: &p, Clock: s.h.clk,
		Logger:       s.rec.Logger(),
		OnTransition: func(t conn.Transition) { s.h.cons.Record(t); s.rec.OnTransition(t) },
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.sup = sup
	s.mu.Unlock()
	return nil
}

func (s *testServer) Status() conn.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sup.Status()
}

func (s *testServer) Reconnect(ctx context.Context) error {
	s.reconnects.Add(1)
	s.mu.Lock()
	old := s.sup
	s.mu.Unlock()
	if r, ok := any(old).(interface{ Reconnect(context.Context) error }); ok {
		return r.Reconnect(ctx) // the supervisor's own, where it has one
	}
	if err := old.Close(ctx); err != nil {
		return err
	}
	if err := s.start(); err != nil {
		return err
	}
	s.mu.Lock()
	sup := s.sup
	s.mu.Unlock()
	return sup.Ready(ctx)
}

// exhaust drives s to exhausted: every attempt is refused from now on.
func (s *testServer) exhaust(t *testing.T) {
	t.Helper()
	s.srv.Plan(conntest.Refuse)
	s.srv.Crash()
	s.rec.Expect(t, wait, conn.LostReconnecting)
	for i := 1; i < s.policy.MaxAttempts; i++ {
		s.h.clk.Add(s.Status().Delay)
		s.rec.Expect(t, wait, conn.Connecting, conn.FailedRetrying)
	}
	s.h.clk.Add(s.Status().Delay)
	s.rec.Expect(t, wait, conn.Connecting, conn.Exhausted)
}

func (h *testHost) Servers() []Server {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Server, len(h.servers))
	for i, s := range h.servers {
		out[i] = s
	}
	return out
}

func (h *testHost) Reload(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reloads++
	return h.reloadErr
}

// do sends a request to the console and decodes its JSON answer into out.
func do(t *testing.T, h http.Handler, method, target string, hdr http.Header, out any) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	req.Host = "127.0.0.1:7777"
	if host := hdr.Get("Host"); host != "" {
		req.Host = host
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	rw := httptest.NewRecorder()
	h.ServeHTTP(rw, req)
	resp := rw.Result()
	body, _ := io.ReadAll(resp.Body)
	if out != nil {
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s %s: Content-Type %q, want application/json; body %s", method, target, ct, body)
		}
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("%s %s: %v; body %s", method, target, err, body)
		}
	}
	return resp
}

var errReloadBroken = errors.New(`mcpfsm.json: servers.x.command: must be a string`)

func contains(s, sub string) bool { return strings.Contains(s, sub) }
