package host

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/mcpfsm/mcpfsm/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ConnConfig carries the tool filter and the concurrency limit to conn.Config.
func TestConnConfigCarriesFilterAndLimit(t *testing.T) {
	s := config.Server{Name: "fs", Type: config.TypeStdio, Command: "x", ExcludeTools: []string{"delete*"}, MaxConcurrentCalls: 3}
	c := ConnConfig(s, nil)
	if c.MaxConcurrentCalls != 3 {
		t.Errorf("MaxConcurrentCalls = %d, want 3", c.MaxConcurrentCalls)
	}
	if c.Filter == nil || c.Filter("delete_all") || !c.Filter("read") {
		t.Errorf("Filter does not apply excludeTools [delete*]")
	}
	if ConnConfig(config.Server{Name: "fs", Type: config.TypeStdio, Command: "x"}, nil).Filter != nil {
		t.Error("a server without filters gets a Filter")
	}
}

// The configured headers of an sse or http server go to its URL's origin
// only: the endpoint answers 307 to another origin (the same host on
// another port, where net/http itself keeps Authorization), which gets
// the redirected requests without them.
func TestHeadersStayWithTheURLsOrigin(t *testing.T) {
	for _, typ := range []string{config.TypeSSE, config.TypeHTTP} {
		t.Run(typ, func(t *testing.T) {
			var mu sync.Mutex
			var atEndpoint, atOther []http.Header
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				atOther = append(atOther, r.Header.Clone())
				mu.Unlock()
				http.Error(w, "not here", http.StatusInternalServerError)
			}))
			defer other.Close()
			endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				atEndpoint = append(atEndpoint, r.Header.Clone())
				mu.Unlock()
				http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
			}))
			defer endpoint.Close()
			defer http.DefaultTransport.(*http.Transport).CloseIdleConnections()
			headers := http.Header{"Authorization": {"Bearer static-token"}, "X-Api-Key": {"k1"}}
			s := config.Server{Name: "a", Type: typ, URL: endpoint.URL + "/mcp", Headers: headers}
			tr, err := Transport(s, nil).Open(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			client := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil)
			if cs, err := client.Connect(context.Background(), tr, nil); err == nil {
				cs.Close()
				t.Fatal("Connect succeeded against a server that only redirects to an error")
			}
			mu.Lock()
			defer mu.Unlock()
			if len(atEndpoint) == 0 || len(atOther) == 0 {
				t.Fatalf("%d requests at the endpoint, %d redirected: want both", len(atEndpoint), len(atOther))
			}
			for k := range headers {
				if got := atEndpoint[0].Get(k); got != headers.Get(k) {
					t.Errorf("endpoint: %s %q, want %q", k, got, headers.Get(k))
				}
				for i, h := range atOther {
					if v := h.Get(k); v != "" {
						t.Errorf("redirected request %d carries %s: %q", i, k, v)
					}
				}
			}
		})
	}
}

// An sse server's client sends its headers, and leaves the caller's
// request alone.
func TestSSEClientSendsTheHeaders(t *testing.T) {
	got := make(chan http.Header, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Clone() }))
	defer ts.Close()
	s := config.Server{Name: "a", Type: config.TypeHTTP, URL: ts.URL, Headers: http.Header{"Authorization": {"Bearer x"}}}
	req, _ := http.NewRequest("GET", ts.URL, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := sseClient(s).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := <-got
	if h.Get("Authorization") != "Bearer x" || h.Get("Accept") != "text/event-stream" {
		t.Errorf("server saw headers %v", h)
	}
	if req.Header.Get("Authorization") != "" {
		t.Errorf("the caller's request was modified: %v", req.Header)
	}
	if sseClient(config.Server{Type: config.TypeHTTP}) != nil {
		t.Errorf("a server without headers should use the SDK's default client")
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
}
