package host

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/redact"
)

// syncBuffer is a log sink safe for the host's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSecretsHiddenByValue: a server given API_TOKEN in its env prints
// the value, which has no credential shape, on its stderr and exits. The
// host's status, its stderr tail, its health report, its log and the
// trace show "[redacted ...]" instead; so does a header's value.
func TestSecretsHiddenByValue(t *testing.T) {
	const secret = "supersecret-env-value-123"
	dir := t.TempDir()
	path := filepath.Join(dir, "servers.json")
	writeFile(t, path, obj{"mcpServers": obj{
		"leaky": obj{"command": "sh", "args": []string{"-c", `echo "started with $API_TOKEN" >&2; exit 3`},
			"env": obj{"API_TOKEN": secret}, "reconnect": obj{"enabled": false}},
	}})
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	secrets := redact.NewSecrets()
	var logs syncBuffer
	logger := slog.New(secrets.Handler(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	tr, err := OpenTrace(filepath.Join(dir, "trace.jsonl"), secrets.String)
	if err != nil {
		t.Fatal(err)
	}
	failed := make(chan struct{})
	var once sync.Once
	record := func(t conn.Transition) {
		tr.Record(t)
		if t.To == conn.FailedDisabled {
			once.Do(func() { close(failed) })
		}
	}
	h := New(Options{Path: path, Logger: logger, Secrets: secrets, OnTransition: record, StartTimeout: 5 * time.Second})
	if err := h.Start(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	select {
	case <-failed:
	case <-time.After(5 * time.Second):
		t.Fatal("no transition to failed-disabled recorded within 5 s")
	}
	// With reconnect disabled the first attempt is the last.
	if sup, _ := h.Supervisor("leaky"); sup.Status().State != conn.FailedDisabled {
		t.Fatalf("state %s, want %s", sup.Status().State, conn.FailedDisabled)
	}
	var shown []string
	for _, st := range h.Status() {
		shown = append(shown, st.Stderr...)
		if st.Err != nil {
			shown = append(shown, st.Err.Error())
		}
		if st.Status.LastErr != nil {
			shown = append(shown, st.Status.LastErr.Error())
		}
	}
	for _, hs := range h.Health() {
		if hs.Status.LastErr != nil {
			shown = append(shown, hs.Status.LastErr.Error())
		}
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	trace, _ := os.ReadFile(filepath.Join(dir, "trace.jsonl"))
	all := strings.Join(shown, "\n") + "\n" + string(trace) + "\n" + logs.String()
	if strings.Contains(all, secret) {
		t.Errorf("the env value is shown:\n%s", all)
	}
	if !strings.Contains(strings.Join(shown, "\n"), "[redacted leaky.env.API_TOKEN]") || !strings.Contains(string(trace), "[redacted leaky.env.API_TOKEN]") {
		t.Errorf("no redaction in the status or the trace:\n%s\ntrace:\n%s", strings.Join(shown, "\n"), trace)
	}
}

// TestAddSecrets: each kind of configured value is registered under its
// name.
func TestAddSecrets(t *testing.T) {
	s := redact.NewSecrets()
	AddSecrets(s, config.Server{Name: "docs", URL: "https://robot:url-password-1@docs.example.com/mcp?api_key=query-value-22&v=1",
		Headers: http.Header{"Authorization": {"Bearer header-token-333"}}, Env: []string{"A=env-value-4444", "B=x"}})
	got := s.String("url-password-1 query-value-22 header-token-333 Bearer header-token-333 env-value-4444 robot x")
	want := "[redacted docs.url.password] [redacted docs.url.query.api_key] [redacted docs.header.Authorization] " +
		"[redacted docs.header.Authorization] [redacted docs.env.A] robot x"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
