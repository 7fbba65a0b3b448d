package console

import (
	"net/http"
	"testing"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/health"
)

// With a token, /healthz answers anyone and /readyz only with the token.
func TestProbesOnTheConsole(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	checker := health.New(func() []health.Status {
		return []health.Status{{Name: "down", Status: conn.Status{State: conn.FailedRetrying}}}
	})
	h := newTestHost(t, Options{Token: token, Health: checker})
	if resp := do(t, h.cons, "GET", health.LivePath, nil, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz without the token: %d, want 200", resp.StatusCode)
	}
	if resp := do(t, h.cons, "GET", health.ReadyPath, nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/readyz without the token: %d, want 401", resp.StatusCode)
	}
	var rep health.Report
	resp := do(t, h.cons, "GET", health.ReadyPath, http.Header{"Authorization": {"Bearer " + token}}, &rep)
	if resp.StatusCode != http.StatusServiceUnavailable || len(rep.NotReady) != 1 || rep.NotReady[0].Name != "down" {
		t.Errorf("/readyz with the token: %d %+v, want 503 naming down", resp.StatusCode, rep)
	}
}
