package httpheader_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfsm/mcpfsm/internal/httpheader"
)

// headerLog records the headers of the requests a test server receives.
type headerLog struct {
	mu   sync.Mutex
	seen []http.Header
}

func (l *headerLog) add(h http.Header) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, h.Clone())
}

func (l *headerLog) all() []http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen
}

// A redirect from the endpoint to another origin (here the same host on
// another port, where net/http itself keeps Authorization) reaches it
// without the configured headers and without the request's
// Authorization; the endpoint itself gets both.
func TestRedirectToAnotherOriginDropsTheHeaders(t *testing.T) {
	var atOther, atEndpoint headerLog
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atOther.add(r.Header)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer other.Close()
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atEndpoint.add(r.Header)
		http.Redirect(w, r, other.URL+"/elsewhere", http.StatusTemporaryRedirect)
	}))
	defer endpoint.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: httpheader.New(endpoint.URL+"/mcp",
		http.Header{"x-api-key": {"k1"}, "Authorization": {"Bearer configured"}}, base)}

	for _, auth := range []string{"", "Bearer oauth-token"} {
		req, _ := http.NewRequest(http.MethodGet, endpoint.URL+"/mcp", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth) // as the SDK sets an OAuth token
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("status %d: the redirect was not followed", resp.StatusCode)
		}
		if req.Header.Get("X-Api-Key") != "" || req.Header.Get("Authorization") != auth {
			t.Errorf("the caller's request was changed: %v", req.Header)
		}
	}
	seen := atEndpoint.all()
	if len(seen) != 2 {
		t.Fatalf("endpoint saw %d requests, want 2", len(seen))
	}
	for i, want := range []string{"Bearer configured", "Bearer oauth-token"} {
		if got := seen[i].Get("Authorization"); got != want {
			t.Errorf("endpoint request %d: Authorization %q, want %q", i, got, want)
		}
		if got := seen[i].Get("X-Api-Key"); got != "k1" {
			t.Errorf("endpoint request %d: X-Api-Key %q, want k1", i, got)
		}
	}
	redirected := atOther.all()
	if len(redirected) != 2 {
		t.Fatalf("the other origin saw %d requests, want 2", len(redirected))
	}
	for i, h := range redirected {
		for _, k := range []string{"Authorization", "X-Api-Key"} {
			if v := h.Get(k); v != "" {
				t.Errorf("redirected request %d carries %s: %q", i, k, v)
			}
		}
	}
}

// recordingBase is a RoundTripper that keeps the requests it is given.
type recordingBase struct{ reqs []*http.Request }

func (b *recordingBase) RoundTrip(r *http.Request) (*http.Response, error) {
	b.reqs = append(b.reqs, r)
	return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Request: r}, nil
}

// The headers go to the endpoint's origin only, whatever its port is
// spelled as; an https endpoint's headers never go over http, even to
// the same host and port.
func TestHeadersGoToTheOriginOnly(t *testing.T) {
	tests := []struct {
		endpoint, target string
		want             bool
	}{
		{"https://h.example/mcp", "https://h.example/other?x=1", true},
		{"https://h.example/mcp", "https://H.EXAMPLE:443/mcp", true},
		{"http://h.example:80/mcp", "http://h.example/mcp", true},
		{"https://h.example/mcp", "http://h.example/mcp", false},
		{"https://h.example:8443/mcp", "http://h.example:8443/mcp", false},
		{"http://h.example/mcp", "https://h.example/mcp", false},
		{"https://h.example/mcp", "https://sub.h.example/mcp", false},
		{"https://h.example/mcp", "https://h.example:444/mcp", false},
		{"http://[::1]:8080/mcp", "http://[::1]:8080/x", true},
		{"not a url", "https://h.example/mcp", false},
	}
	for _, tt := range tests {
		base := &recordingBase{}
		tr := httpheader.New(tt.endpoint, http.Header{"X-Api-Key": {"k1"}}, base)
		req, _ := http.NewRequest(http.MethodGet, tt.target, nil)
		req.Header.Set("Authorization", "Bearer t")
		if _, err := tr.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
		got := base.reqs[0].Header
		want := http.Header{}
		if tt.want {
			want = http.Header{"X-Api-Key": {"k1"}, "Authorization": {"Bearer t"}}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s -> %s: headers sent (-want +got):\n%s", tt.endpoint, tt.target, diff)
		}
		if req.Header.Get("Authorization") != "Bearer t" || req.Header.Get("X-Api-Key") != "" {
			t.Errorf("%s -> %s: the caller's request was changed: %v", tt.endpoint, tt.target, req.Header)
		}
	}
}

func TestOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"https://Host.Example/mcp": "https://host.example:443",
		"http://h:8080":            "http://h:8080",
		"http://[::1]/x":           "http://[::1]:80",
		"ftp://h/":                 "",
		"/relative":                "",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := httpheader.Origin(u); got != want {
			t.Errorf("Origin(%q) = %q, want %q", in, got, want)
		}
	}
}

// A URL with user info (user:password@host) never replaces a configured
// Authorization: http.Client makes a Basic header of the user info before
// the round-tripper runs, which used to keep it; the endpoint gets the
// configured one. Without a configured Authorization, the user info's
// Basic header is sent as before.
func TestUserInfoNeverReplacesTheConfiguredAuthorization(t *testing.T) {
	var seen headerLog
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.add(r.Header)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	u.User = url.UserPassword("robot", "url-password")
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	for _, tc := range []struct {
		header http.Header
		want   string
	}{
		{http.Header{"Authorization": {"Bearer configured-token"}}, "Bearer configured-token"},
		{http.Header{"X-Api-Key": {"k"}}, "Basic cm9ib3Q6dXJsLXBhc3N3b3Jk"},
	} {
		c := &http.Client{Transport: httpheader.New(u.String(), tc.header, base)}
		resp, err := c.Get(u.String() + "/mcp")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := seen.all()
		if a := got[len(got)-1].Get("Authorization"); a != tc.want {
			t.Errorf("configured %v: the endpoint got Authorization %q, want %q", tc.header, a, tc.want)
		}
	}
}
