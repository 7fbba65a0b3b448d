package console

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
)

func TestStatusReport(t *testing.T) {
	h := newTestHost(t, Options{})
	alpha := h.add("alpha", 3)
	beta := h.add("beta", 3, conntest.Refuse)
	alpha.rec.Expect(t, wait, conn.Established)
	beta.rec.Expect(t, wait, conn.FailedRetrying)
	now := h.clk.Now()

	var got StatusReport
	resp := do(t, h.cons, "GET", "/api/status", nil, &got)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	want := StatusReport{Now: now, Servers: []ServerStatus{
		{
			Name: "alpha", State: "established", Phrase: "connected", MaxAttempts: 3, Since: now,
			Generation: 1, Tools: []string{"mcp__alpha__echo"}, ToolCount: 1,
			Transitions: []TransitionRecord{{At: now, From: "connecting", To: "established", Event: "connected", MaxAttempts: 3, Generation: 1}},
		},
		{
			Name: "beta", State: "failed-retrying", Phrase: "connection failed; retrying", Alarm: true,
			Attempt: 1, MaxAttempts: 3, Since: now, NextRetry: now.Add(time.Second), DelayMs: 1000,
			LastError:  `mcp server "beta": connection failed: open transport: generation 1 refused`,
			Generation: 1, Tools: []string{}, ToolCount: 0,
			Transitions: []TransitionRecord{{
				At: now, From: "connecting", To: "failed-retrying", Event: "attempt-failed", Attempt: 1, MaxAttempts: 3, DelayMs: 1000,
				Error: `mcp server "beta": connection failed: open transport: generation 1 refused`, Generation: 1,
			}},
		},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("/api/status (-want +got):\n%s", diff)
	}
}

// The JSON field names are an API: this test fails when one changes
// without the documentation.
func TestStatusFieldNames(t *testing.T) {
	h := newTestHost(t, Options{})
	s := h.add("beta", 3, conntest.Refuse)
	s.rec.Expect(t, wait, conn.FailedRetrying)
	var raw struct {
		Now     any              `json:"now"`
		Servers []map[string]any `json:"servers"`
	}
	do(t, h.cons, "GET", "/api/status", nil, &raw)
	if len(raw.Servers) != 1 {
		t.Fatalf("servers: %v", raw.Servers)
	}
	got := slices.Sorted(maps.Keys(raw.Servers[0]))
	want := []string{"alarm", "attempt", "delayMs", "generation", "lastError", "maxAttempts", "name", "nextRetry",
		"phrase", "since", "state", "toolCount", "tools", "transitions"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("server fields (-want +got):\n%s", diff)
	}
	tr := raw.Servers[0]["transitions"].([]any)[0].(map[string]any)
	got = slices.Sorted(maps.Keys(tr))
	want = []string{"at", "attempt", "delayMs", "error", "event", "from", "generation", "maxAttempts", "to"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("transition fields (-want +got):\n%s", diff)
	}
}

func TestReconnectExhausted(t *testing.T) {
	h := newTestHost(t, Options{})
	s := h.add("alpha", 2)
	s.rec.Expect(t, wait, conn.Established)
	s.exhaust(t)
	var before StatusReport
	do(t, h.cons, "GET", "/api/status", nil, &before)
	if st := before.Servers[0].State; st != "exhausted" {
		t.Fatalf("state before %s", st)
	}

	s.srv.Plan(conntest.Accept)
	var got ReconnectResult
	resp := do(t, h.cons, "POST", "/api/servers/alpha/reconnect", nil, &got)
	if resp.StatusCode != http.StatusOK || got.Error != "" {
		t.Fatalf("reconnect: %d %+v", resp.StatusCode, got)
	}
	if n := s.reconnects.Load(); n != 1 {
		t.Errorf("Reconnect called %d times, want 1", n)
	}
	if got.Name != "alpha" || got.Server.State != "established" || got.Server.ToolCount != 1 {
		t.Errorf("after reconnect: %+v", got.Server)
	}
}

func TestReconnectFailureIs502(t *testing.T) {
	h := newTestHost(t, Options{})
	s := h.add("alpha", 2)
	s.rec.Expect(t, wait, conn.Established)
	s.exhaust(t)
	var got ReconnectResult
	resp := do(t, h.cons, "POST", "/api/servers/alpha/reconnect", nil, &got)
	if resp.StatusCode != http.StatusBadGateway || !contains(got.Error, "refused") {
		t.Fatalf("reconnect of a refusing server: %d %+v, want 502 naming the cause", resp.StatusCode, got)
	}
	if got.Server.State == "established" {
		t.Errorf("state %s after a failed reconnect", got.Server.State)
	}
}

func TestReconnectAll(t *testing.T) {
	h := newTestHost(t, Options{})
	a := h.add("alpha", 2)
	b := h.add("beta", 2)
	a.rec.Expect(t, wait, conn.Established)
	b.rec.Expect(t, wait, conn.Established)
	b.exhaust(t) // and still refusing

	var got ReconnectAllResult
	resp := do(t, h.cons, "POST", "/api/reconnect", nil, &got)
	if resp.StatusCode != http.StatusBadGateway || got.Error != "1 of 2 servers did not reconnect" {
		t.Fatalf("reconnect all: %d %q", resp.StatusCode, got.Error)
	}
	states := map[string]string{}
	for _, r := range got.Results {
		states[r.Name] = r.Server.State
	}
	if states["alpha"] != "established" || states["beta"] == "established" || states["beta"] == "" {
		t.Errorf("states after reconnect all: %v, want alpha established and beta not", states)
	}
	if a.reconnects.Load() != 1 || b.reconnects.Load() != 1 {
		t.Errorf("reconnects alpha %d beta %d, want 1 each", a.reconnects.Load(), b.reconnects.Load())
	}
}

func TestBadRequests(t *testing.T) {
	h := newTestHost(t, Options{})
	h.add("alpha", 2).rec.Expect(t, wait, conn.Established)
	for _, tc := range []struct {
		method, target string
		code           int
		allow          string
		msg            string
	}{
		{"POST", "/api/servers/nope/reconnect", 404, "", `unknown server "nope"`},
		{"POST", "/api/servers/alpha/restart", 404, "", "no endpoint"},
		{"GET", "/api/nothing", 404, "", "no endpoint /api/nothing"},
		{"GET", "/metrics", 404, "", "no endpoint /metrics"},
		{"GET", "/api/servers/alpha/reconnect", 405, "POST", "method GET not allowed"},
		{"GET", "/api/reconnect", 405, "POST", "use POST"},
		{"DELETE", "/api/reload", 405, "POST", "method DELETE"},
		{"POST", "/api/status", 405, "GET, HEAD", "use GET"},
		{"POST", "/api/events", 405, "GET, HEAD", "use GET"},
		{"PUT", "/", 405, "GET, HEAD", "use GET"},
	} {
		var e apiError
		resp := do(t, h.cons, tc.method, tc.target, nil, &e)
		if resp.StatusCode != tc.code || resp.Header.Get("Allow") != tc.allow || !contains(e.Error, tc.msg) {
			t.Errorf("%s %s: %d Allow=%q %q; want %d Allow=%q containing %q",
				tc.method, tc.target, resp.StatusCode, resp.Header.Get("Allow"), e.Error, tc.code, tc.allow, tc.msg)
		}
	}
}

func TestReload(t *testing.T) {
	h := newTestHost(t, Options{})
	h.add("alpha", 2).rec.Expect(t, wait, conn.Established)
	var ok StatusReport
	if resp := do(t, h.cons, "POST", "/api/reload", nil, &ok); resp.StatusCode != 200 || len(ok.Servers) != 1 {
		t.Errorf("reload: %d %+v", resp.StatusCode, ok)
	}
	h.mu.Lock()
	h.reloadErr = errReloadBroken
	h.mu.Unlock()
	h.clk.Add(ReconnectInterval)
	var e apiError
	if resp := do(t, h.cons, "POST", "/api/reload", nil, &e); resp.StatusCode != 500 ||
		e.Error != "reload: "+errReloadBroken.Error() {
		t.Errorf("broken reload: %d %q", resp.StatusCode, e.Error)
	}
	h.mu.Lock()
	h.reloadErr = ErrReloadUnsupported
	n := h.reloads
	h.mu.Unlock()
	h.clk.Add(ReconnectInterval)
	if resp := do(t, h.cons, "POST", "/api/reload", nil, &e); resp.StatusCode != 501 {
		t.Errorf("unsupported reload: %d %q", resp.StatusCode, e.Error)
	}
	if n != 2 {
		t.Errorf("Reload called %d times before the last, want 2", n)
	}
}

func TestMetricsMounted(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write([]byte("mcpfsm_up 1\n"))
	})
	h := newTestHost(t, Options{Metrics: metrics})
	resp := do(t, h.cons, "GET", "/metrics", nil, nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/plain; version=0.0.4" {
		t.Errorf("/metrics: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

func TestPageAssets(t *testing.T) {
	h := newTestHost(t, Options{})
	for path, ctype := range map[string]string{
		"/": "text/html; charset=utf-8", "/app.js": "text/javascript; charset=utf-8",
		"/style.css": "text/css; charset=utf-8", "/diagram.svg": "image/svg+xml",
	} {
		resp := do(t, h.cons, "GET", path, nil, nil)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ctype {
			t.Errorf("%s: %d %q, want 200 %q", path, resp.StatusCode, resp.Header.Get("Content-Type"), ctype)
		}
	}
}

func TestHistoryIsBounded(t *testing.T) {
	h := newTestHost(t, Options{HistorySize: 3})
	s := h.add("alpha", 5)
	s.rec.Expect(t, wait, conn.Established)
	s.srv.Crash()
	s.rec.Expect(t, wait, conn.LostReconnecting)
	h.clk.Add(time.Second)
	s.rec.Expect(t, wait, conn.Connecting, conn.Established)
	var got StatusReport
	do(t, h.cons, "GET", "/api/status", nil, &got)
	var path []string
	for _, tr := range got.Servers[0].Transitions {
		path = append(path, tr.From+">"+tr.To)
	}
	want := []string{"established>lost-reconnecting", "lost-reconnecting>connecting", "connecting>established"}
	if diff := cmp.Diff(want, path, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("recent transitions (-want +got):\n%s", diff)
	}
}

func TestFollow(t *testing.T) {
	h := newTestHost(t, Options{})
	ch := make(chan conn.Transition, 2)
	ch <- conn.Transition{Server: "x", From: conn.Connecting, To: conn.Established, Event: conn.EventConnected}
	ch <- conn.Transition{Server: "x", From: conn.Established, To: conn.LostReconnecting, Event: conn.EventConnectionLost}
	close(ch)
	h.cons.Follow(context.Background(), ch) // returns when ch is closed
	var got []string
	for _, tr := range h.cons.hist.recent("x") {
		got = append(got, string(tr.To))
	}
	if diff := cmp.Diff([]string{"established", "lost-reconnecting"}, got); diff != "" {
		t.Errorf("followed (-want +got):\n%s", diff)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h.cons.Follow(ctx, make(chan conn.Transition)) // returns when ctx has ended
}

// The tools a server's filter hid are counted in its status.
func TestStatusCountsHiddenTools(t *testing.T) {
	got := serverStatus(conn.Status{Server: "fs", State: conn.Established, Tools: []string{"mcp__fs__read"}, HiddenTools: 2}, nil)
	if got.HiddenTools != 2 || got.ToolCount != 1 {
		t.Fatalf("hiddenTools %d, toolCount %d; want 2 and 1", got.HiddenTools, got.ToolCount)
	}
}
