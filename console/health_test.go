package console

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// /api/trace offers the host's trace file, behind the access rule.
func TestTraceDownload(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	line := `{"server":"a","from":"connecting","event":"connected","to":"established"}` + "\n"
	if err := os.WriteFile(path, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newTestHost(t, Options{Token: token, TracePath: path})
	if resp := do(t, h.cons, "GET", "/api/trace", nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/api/trace without the token: %d, want 401", resp.StatusCode)
	}
	req := httptest.NewRequest("GET", "/api/trace", nil)
	req.Host = "127.0.0.1:7777"
	req.Header.Set("Authorization", "Bearer "+token)
	rw := httptest.NewRecorder()
	h.cons.ServeHTTP(rw, req)
	if rw.Code != http.StatusOK || rw.Body.String() != line {
		t.Errorf("/api/trace: %d %q, want the file", rw.Code, rw.Body.String())
	}
	none := newTestHost(t, Options{})
	if resp := do(t, none.cons, "GET", "/api/trace", nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/api/trace without -trace: %d, want 404", resp.StatusCode)
	}
}
