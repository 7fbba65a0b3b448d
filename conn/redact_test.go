package conn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// syncBuffer is a bytes.Buffer that log handlers on several goroutines
// can share.
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

// secretSeen returns where secret appears in what a supervisor showed:
// its Status (marshalled whole, and its LastErr's message), its
// transitions (marshalled whole, and their errors' messages) and its log.
func secretSeen(secret string, st conn.Status, trs []conn.Transition, logs string) []string {
	var where []string
	check := func(what, text string) {
		if strings.Contains(text, secret) {
			where = append(where, what+": "+text)
		}
	}
	b, _ := json.Marshal(st)
	check("Status JSON", string(b))
	if st.LastErr != nil {
		check("Status.LastErr", st.LastErr.Error())
	}
	for _, tr := range trs {
		b, _ := json.Marshal(tr)
		check("Transition JSON", string(b))
		if tr.Err != nil {
			check("Transition.Err", tr.Err.Error())
		}
	}
	check("log", logs)
	return where
}

// An HTTP endpoint URL's query values (an api_key) appear in no Status,
// Transition, error or log line of its supervisor, whether the server
// answers with an error (whose body quotes the URL) or refuses the
// connection (where net/http quotes the URL in its error).
func TestEndpointSecretsStayOutOfStatusErrorsAndLogs(t *testing.T) {
	const secret = "s3cret"
	answering := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "cannot serve "+r.URL.String(), http.StatusInternalServerError)
	}))
	defer answering.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()

	for _, tt := range []struct{ name, base, cause string }{
		{"error answer", answering.URL, "HTTP 500"},
		{"refused", refused, "refused"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client := &http.Client{Transport: &http.Transport{}}
			defer client.CloseIdleConnections()
			tr := conn.Streamable(tt.base + "/mcp?api_key=" + secret + "&region=eu")
			tr.Client = client
			rec := conntest.NewRecorder()
			var logs syncBuffer
			p := policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: time.Second, MaxAttempts: 3}
			sup, err := conn.Start(context.Background(), conn.Config{
				Name: "leaky", Transport: tr, Registry: conn.NewRegistry(), Reconnect: &p, Clock: clock.NewMock(),
				Logger:       slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
				OnTransition: rec.OnTransition,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer sup.Close(context.Background())
			trs := rec.Expect(t, waitLimit, conn.FailedRetrying)
			st := sup.Status()
			if st.LastErr == nil || !strings.Contains(st.LastErr.Error(), tt.cause) {
				t.Fatalf("LastErr = %v, want the cause %q", st.LastErr, tt.cause)
			}
			if !strings.Contains(st.LastErr.Error(), "api_key=REDACTED") {
				t.Errorf("LastErr = %v, want the URL with its query masked", st.LastErr)
			}
			if !strings.Contains(logs.String(), "connection failed") {
				t.Fatalf("no failure logged: %s", logs.String())
			}
			for _, w := range secretSeen(secret, st, trs, logs.String()) {
				t.Errorf("the secret is in the %s", w)
			}
		})
	}
}

// An HTTP.Endpoint that is not a URL is refused with an error that does
// not quote its query values.
func TestInvalidEndpointErrorHidesTheQuery(t *testing.T) {
	_, err := conn.Start(context.Background(), conn.Config{
		Name: "bad", Transport: conn.Streamable("ftp://host/mcp?api_key=s3cret"), Registry: conn.NewRegistry(),
	})
	if err == nil || !strings.Contains(err.Error(), "ftp://host/mcp?api_key=REDACTED") {
		t.Fatalf("err = %v, want it to name the endpoint with its query masked", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("err = %v: the secret is in it", err)
	}
}

// A tool call's error is redacted too (the caller may be a remote MCP
// client), and keeps its chain: the server's JSON-RPC error is still found.
func TestCallErrorIsRedacted(t *testing.T) {
	srv, rec := conntest.NewServer(), conntest.NewRecorder()
	srv.AddEchoTool("echo")
	srv.MCP.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				return nil, &jsonrpc.Error{Code: -32001, Message: "refused: token=s3cret is revoked"}
			}
			return next(ctx, method, req)
		}
	})
	reg := conn.NewRegistry()
	startEstablished(t, srv, rec, conn.Config{Registry: reg})
	tools := reg.Tools()
	if len(tools) != 1 {
		t.Fatalf("tools %v, want echo alone", tools)
	}
	_, err := tools[0].Call(context.Background(), map[string]any{})
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != -32001 {
		t.Fatalf("err = %v, want the server's JSON-RPC error inside", err)
	}
	if !strings.Contains(err.Error(), "token=REDACTED is revoked") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("err = %q, want the token masked", err)
	}
}
