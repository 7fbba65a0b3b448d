package conn_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTP.Header reaches every request of every generation, the SDK's own
// headers win, and Config.Implementation is the identity sent in
// initialize ("mcpfsm" at the build's version when nil).
func TestHTTPHeaderAndImplementation(t *testing.T) {
	var mu sync.Mutex
	var seen []http.Header
	var clients []string
	server := mcp.NewServer(&mcp.Implementation{Name: "srv"}, &mcp.ServerOptions{
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) {
			info := req.Session.InitializeParams().ClientInfo
			mu.Lock()
			clients = append(clients, info.Name+" "+info.Version)
			mu.Unlock()
		},
	})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if r.Method == http.MethodPost {
			seen = append(seen, r.Header.Clone())
		}
		mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	for _, impl := range []*mcp.Implementation{nil, {Name: "my-host", Version: "1.2.3"}} {
		mu.Lock()
		seen, clients = nil, nil
		mu.Unlock()
		tr := conn.Streamable(ts.URL)
		tr.Client = client
		tr.Header = http.Header{"X-Api-Key": {"k1"}, "Content-Type": {"text/plain"}}
		sup, err := conn.Start(context.Background(), conn.Config{
			Name: "h", Transport: tr, Registry: conn.NewRegistry(), FailOnStartupError: true,
			Implementation: impl, Logger: quiet(),
		})
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		if err := sup.Close(context.Background()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		mu.Lock()
		if len(seen) == 0 {
			t.Fatal("no request seen")
		}
		for _, h := range seen {
			if got := h.Get("X-Api-Key"); got != "k1" {
				t.Errorf("%s request: X-Api-Key %q, want k1", h.Get("Mcp-Method"), got)
			}
			if got := h.Get("Content-Type"); got != "application/json" {
				t.Errorf("POST Content-Type %q: the SDK's application/json must win over the configured one", got)
			}
		}
		want := "mcpfsm (devel)"
		if impl != nil {
			want = "my-host 1.2.3"
		}
		if len(clients) != 1 || clients[0] != want {
			t.Errorf("client identity %v, want [%s]", clients, want)
		}
		mu.Unlock()
	}
}

func TestHTTPHeaderValidation(t *testing.T) {
	for _, h := range []http.Header{{"Bad Name": {"x"}}, {"X-Ok": {"line\nbreak"}}} {
		tr := conn.Streamable("http://127.0.0.1:1/mcp")
		tr.Header = h
		_, err := conn.Start(context.Background(), conn.Config{Name: "h", Transport: tr, Registry: conn.NewRegistry()})
		var ce *conn.ConfigError
		if !errors.As(err, &ce) || ce.Field != "Transport" {
			t.Errorf("header %v: err = %v, want a *ConfigError for Transport", h, err)
		}
	}
}
