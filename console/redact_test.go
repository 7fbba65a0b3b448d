package console

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/health"
	"github.com/mcpfsm/mcpfsm/internal/redact"
)

const leaked = "supersecret-env-value-123"

// leakyServer is a server whose last error holds a configured secret (it
// printed its env on stderr before it exited).
type leakyServer struct{}

func (leakyServer) Status() conn.Status {
	return conn.Status{Server: "leaky", State: conn.FailedRetrying, LastErr: errors.New("exited; stderr: token " + leaked)}
}

func (leakyServer) Reconnect(context.Context) error {
	return errors.New("exited again; stderr: " + leaked)
}

type leakyHost struct{}

func (leakyHost) Servers() []Server                { return []Server{leakyServer{}} }
func (leakyHost) Reload(ctx context.Context) error { return errors.New("reload: " + leaked) }

// TestAnswersHideSecretsByValue: with Options.Redact, a configured secret
// value (of no credential shape) is in no answer of the console: the
// status, the event stream, a reconnect's and a reload's errors, /readyz
// and /api/trace.
func TestAnswersHideSecretsByValue(t *testing.T) {
	secrets := redact.NewSecrets()
	secrets.Add("leaky.env.API_TOKEN", leaked)
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(trace, []byte(`{"server":"leaky","cause":"stderr: `+leaked+`"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	checker := health.New(func() []health.Status {
		return []health.Status{{Name: "leaky", Status: leakyServer{}.Status()}}
	})
	cons := New(leakyHost{}, Options{Redact: secrets.String, Health: checker, TracePath: trace})
	defer cons.Close()
	ts := httptest.NewServer(cons)
	defer ts.Close()
	for _, tc := range []struct{ method, path string }{
		{"GET", "/api/status"}, {"POST", "/api/servers/leaky/reconnect"}, {"POST", "/api/reconnect"},
		{"POST", "/api/reload"}, {"GET", "/readyz"}, {"GET", "/api/trace"}, {"GET", "/api/events"},
	} {
		req, _ := http.NewRequest(tc.method, ts.URL+tc.path, nil)
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body string
		if tc.path == "/api/events" {
			br := bufio.NewReader(resp.Body)
			for !strings.HasPrefix(body, "data:") {
				if body, err = br.ReadString('\n'); err != nil {
					t.Fatal(err)
				}
			}
		} else {
			b, _ := io.ReadAll(resp.Body)
			body = string(b)
		}
		resp.Body.Close()
		if strings.Contains(body, leaked) || !strings.Contains(body, "[redacted leaky.env.API_TOKEN]") {
			t.Errorf("%s %s: %s\nwant the secret hidden by name", tc.method, tc.path, body)
		}
	}
}
