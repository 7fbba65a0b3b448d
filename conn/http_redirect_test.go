package conn_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"github.com/mcpfsm/mcpfsm/conn"
)

// staticOAuth is an OAuthHandler that always has the same token.
type staticOAuth struct{ token string }

func (h staticOAuth) TokenSource(context.Context) (oauth2.TokenSource, error) {
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: h.token, TokenType: "Bearer"}), nil
}

func (staticOAuth) Authorize(context.Context, *http.Request, *http.Response) error {
	return errors.New("staticOAuth cannot authorize")
}

// redirectPair is an endpoint that answers every request with a 307 to
// another origin (the same host on another port, where net/http itself
// keeps Authorization), and the headers each of them received.
type redirectPair struct {
	endpoint, other *httptest.Server
	mu              sync.Mutex
	atEndpoint      []http.Header
	atOther         []http.Header
}

func newRedirectPair(t *testing.T) *redirectPair {
	p := &redirectPair{}
	p.other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.atOther = append(p.atOther, r.Header.Clone())
		p.mu.Unlock()
		http.Error(w, "not here", http.StatusInternalServerError)
	}))
	p.endpoint = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.atEndpoint = append(p.atEndpoint, r.Header.Clone())
		p.mu.Unlock()
		http.Redirect(w, r, p.other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(p.endpoint.Close)
	t.Cleanup(p.other.Close)
	return p
}

// check fails t unless the endpoint got every header of want and the
// other origin got the redirected requests without any of them.
func (p *redirectPair) check(t *testing.T, want http.Header) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.atEndpoint) == 0 || len(p.atOther) == 0 {
		t.Fatalf("%d requests at the endpoint, %d redirected: want both", len(p.atEndpoint), len(p.atOther))
	}
	for k := range want {
		if got, w := p.atEndpoint[0].Get(k), want.Get(k); got != w {
			t.Errorf("endpoint: %s %q, want %q", k, got, w)
		}
		for i, h := range p.atOther {
			if v := h.Get(k); v != "" {
				t.Errorf("redirected request %d to another origin carries %s: %q", i, k, v)
			}
		}
	}
}

// An HTTP server's configured headers and OAuth token go to the
// endpoint's origin only: a 307 to another origin is followed without them.
func TestHTTPHeadersStayWithTheEndpointsOrigin(t *testing.T) {
	tests := []struct {
		name  string
		set   func(*conn.HTTP)
		wants http.Header
	}{
		{"configured headers", func(h *conn.HTTP) {
			h.Header = http.Header{"Authorization": {"Bearer static-token"}, "X-Api-Key": {"k1"}}
		}, http.Header{"Authorization": {"Bearer static-token"}, "X-Api-Key": {"k1"}}},
		{"OAuth token", func(h *conn.HTTP) { h.OAuthHandler = staticOAuth{token: "oauth-token"} },
			http.Header{"Authorization": {"Bearer oauth-token"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newRedirectPair(t)
			client := &http.Client{Transport: &http.Transport{}}
			defer client.CloseIdleConnections()
			tr := conn.Streamable(p.endpoint.URL + "/mcp")
			tr.Client = client
			tt.set(tr)
			_, err := conn.Start(context.Background(), conn.Config{
				Name: "redirected", Transport: tr, Registry: conn.NewRegistry(), FailOnStartupError: true, Logger: quiet(),
			})
			if err == nil {
				t.Fatal("Start succeeded against a server that only redirects to an error")
			}
			p.check(t, tt.wants)
		})
	}
}
