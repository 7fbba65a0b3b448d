package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/metrics"
)

func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s\n%s", resp.Status, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q, want the text format", ct)
	}
	return string(body)
}

// A scrape of a host with one established supervisor that served a call.
func TestPrometheusScrape(t *testing.T) {
	mp, h, err := metrics.Prometheus()
	if err != nil {
		t.Fatal(err)
	}
	defer mp.Shutdown(context.Background())
	m, err := metrics.New(mp)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	srv := newServer(t)
	rec := conntest.NewRecorder()
	cfg := config("fx", srv, clock.NewMock(), rec)
	cfg.FailOnStartupError = true
	reg := cfg.Registry.(*conn.ToolRegistry)
	sup, err := m.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer closeSup(t, sup)
	if _, err := reg.Call(context.Background(), "mcp__fx__echo", nil); err != nil {
		t.Fatal(err)
	}

	body := scrape(t, h)
	for _, want := range []string{
		`# TYPE mcpfsm_connection_state gauge`,
		`mcpfsm_connection_state{mcpfsm_server_name="fx",mcpfsm_state="established"} 1`,
		`mcpfsm_connection_state{mcpfsm_server_name="fx",mcpfsm_state="lost-reconnecting"} 0`,
		`mcpfsm_connection_tools{mcpfsm_server_name="fx"} 2`,
		`# TYPE mcpfsm_connection_transitions_total counter`,
		`mcpfsm_connection_transitions_total{mcpfsm_server_name="fx",mcpfsm_transition_event="connected",mcpfsm_transition_from="connecting",mcpfsm_transition_to="established"} 1`,
		`# TYPE mcp_client_operation_duration_seconds histogram`,
		`mcp_client_operation_duration_seconds_count{gen_ai_operation_name="execute_tool",gen_ai_tool_name="echo",mcp_method_name="tools/call",mcpfsm_call_outcome="ok",mcpfsm_server_name="fx"} 1`,
		`mcp_client_operation_duration_seconds_bucket{gen_ai_operation_name="execute_tool",gen_ai_tool_name="echo",mcp_method_name="tools/call",mcpfsm_call_outcome="ok",mcpfsm_server_name="fx",le="0.005"} 1`,
		`# TYPE go_goroutines gauge`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("scrape lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("scrape:\n%s", body)
	}
}

// Two hosts in one process have registries of their own.
func TestPrometheusTwice(t *testing.T) {
	for range 2 {
		mp, h, err := metrics.Prometheus()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := metrics.New(mp); err != nil {
			t.Fatal(err)
		}
		if body := scrape(t, h); !strings.Contains(body, "go_goroutines") {
			t.Errorf("scrape without the Go collector:\n%s", body)
		}
		if err := mp.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}
