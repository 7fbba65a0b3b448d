package health_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/health"
)

func probe(t *testing.T, h http.Handler) (int, health.Report) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, health.ReadyPath, nil))
	var rep health.Report
	if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
		t.Fatalf("/readyz body %q: %v", rec.Body, err)
	}
	return rec.Code, rep
}

func TestReady(t *testing.T) {
	servers := []health.Status{
		{Name: "b", Status: conn.Status{State: conn.Established}},
		{Name: "a", Status: conn.Status{State: conn.Established}},
	}
	c := health.New(func() []health.Status { return servers })
	if code, rep := probe(t, c.Ready()); code != http.StatusOK || !rep.Ready || rep.Servers != 2 {
		t.Fatalf("all established: %d %+v, want 200 ready", code, rep)
	}

	servers[0].Status = conn.Status{State: conn.LostReconnecting, LastErr: errors.New("exited; stderr: key=hunter2-value")}
	servers = append(servers, health.Status{Name: "c", Err: errors.New("bad command")})
	// The users' probe names the servers and their states, never their
	// errors (a server's stderr is in them).
	code, rep := probe(t, c.Ready())
	want := health.Report{Servers: 3, NotReady: []health.Server{
		{Name: "b", State: "lost-reconnecting"},
		{Name: "c", State: "not started"},
	}}
	if code != http.StatusServiceUnavailable {
		t.Errorf("a server down: %d, want 503", code)
	}
	if d := cmp.Diff(want, rep); d != "" {
		t.Errorf("report (-want +got):\n%s", d)
	}
	// The operator's has them, hidden as asked.
	code, rep = probe(t, c.ReadyDetailed(func(s string) string { return strings.ReplaceAll(s, "hunter2-value", "[redacted k]") }))
	want.NotReady[0].Error, want.NotReady[1].Error = "exited; stderr: key=[redacted k]", "bad command"
	if d := cmp.Diff(want, rep); code != http.StatusServiceUnavailable || d != "" {
		t.Errorf("detailed: %d (-want +got):\n%s", code, d)
	}
}

func TestDrainTurnsReadyOff(t *testing.T) {
	c := health.New(func() []health.Status {
		return []health.Status{{Name: "a", Status: conn.Status{State: conn.Established}}}
	})
	c.Drain()
	if code, rep := probe(t, c.Ready()); code != http.StatusServiceUnavailable || rep.Ready || !rep.Draining {
		t.Fatalf("draining: %d %+v, want 503 draining", code, rep)
	}
	rec := httptest.NewRecorder()
	c.Live().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, health.LivePath, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/healthz while draining: %d, want 200", rec.Code)
	}
}
