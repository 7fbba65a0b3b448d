package console

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpfsm/mcpfsm/access"
	"github.com/mcpfsm/mcpfsm/conn"
)

// testToken is a token access.CheckToken accepts.
const testToken = "s3cret-7f2a9c41-e8d0-4b6f"

func TestListenLoopbackRule(t *testing.T) {
	for _, tc := range []struct {
		addr, token string
		refused     bool
	}{
		{"127.0.0.1:0", "", false},
		{"localhost:0", "", false},
		{"[::1]:0", "", false},
		{"0.0.0.0:0", "", true},
		{":0", "", true},
		{"[::]:0", "", true},
		{"0.0.0.0:0", testToken, false},
		{":0", testToken, false},
	} {
		ln, err := Listen(tc.addr, tc.token)
		if ln != nil {
			ln.Close()
		}
		if tc.refused {
			if !errors.Is(err, ErrNeedToken) || !strings.Contains(err.Error(), "MCPFSM_TOKEN") || !strings.Contains(err.Error(), "-token-file") {
				t.Errorf("Listen(%q, %q) = %v; want ErrNeedToken naming -token-file and MCPFSM_TOKEN", tc.addr, tc.token, err)
			}
			continue
		}
		var ne *net.OpError
		if errors.As(err, &ne) && strings.Contains(tc.addr, "::1") {
			t.Logf("Listen(%q): %v (no IPv6 here)", tc.addr, err)
			continue
		}
		if err != nil {
			t.Errorf("Listen(%q, %q): %v", tc.addr, tc.token, err)
		}
	}
	if _, err := Listen("7777", ""); err == nil || !strings.Contains(err.Error(), "HOST:PORT") {
		t.Errorf("Listen without a port: %v, want an error naming HOST:PORT", err)
	}
	_, err := Listen("0.0.0.0:0", "s3cret")
	if !errors.Is(err, access.ErrShortToken) || !strings.Contains(err.Error(), "-http-token") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Listen with a short token: %v, want ErrShortToken naming -http-token, without the token", err)
	}
}

func TestTokenRequired(t *testing.T) {
	rule, err := access.New(access.Config{Token: testToken, Cookie: CookieName, AllowHosts: []string{"console.example"}})
	if err != nil {
		t.Fatal(err)
	}
	h := newTestHost(t, Options{Rule: rule})
	h.add("alpha", 2).rec.Expect(t, wait, conn.Established)
	remote := http.Header{"Host": {"console.example:7777"}}
	for _, tc := range []struct {
		name   string
		method string
		target string
		hdr    http.Header
		code   int
	}{
		{"no token", "GET", "/api/status", remote, 401},
		{"no token, loopback too", "GET", "/api/status", nil, 401},
		{"wrong token", "GET", "/api/status", http.Header{"Host": remote["Host"], "Authorization": {"Bearer nope"}}, 401},
		{"basic auth", "GET", "/api/status", http.Header{"Host": remote["Host"], "Authorization": {"Basic czNjcmV0"}}, 401},
		{"bearer", "GET", "/api/status", http.Header{"Host": remote["Host"], "Authorization": {"Bearer " + testToken}}, 200},
		{"cookie", "GET", "/api/status", http.Header{"Host": remote["Host"], "Cookie": {cookieName + "=" + testToken}}, 200},
		{"wrong cookie", "GET", "/", http.Header{"Host": remote["Host"], "Cookie": {cookieName + "=x"}}, 401},
		{"query token on a POST", "POST", "/api/reconnect?token=" + testToken, remote, 401},
		{"wrong query token", "GET", "/?token=nope", remote, 401},
		{"page", "GET", "/", remote, 401},
		{"metrics too", "GET", "/metrics", remote, 401},
		{"unlisted host, with the token", "GET", "/api/status", http.Header{"Host": {"rebind.evil.example"}, "Authorization": {"Bearer " + testToken}}, 403},
	} {
		resp := do(t, h.cons, tc.method, tc.target, tc.hdr, nil)
		if resp.StatusCode != tc.code {
			t.Errorf("%s: %s %s = %d, want %d", tc.name, tc.method, tc.target, resp.StatusCode, tc.code)
		}
		if tc.code == 401 && resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", tc.name)
		}
	}

	// ?token= once sets the cookie and drops the token from the address.
	resp := do(t, h.cons, "GET", "/?token="+testToken+"&x=1", remote, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/?x=1" {
		t.Fatalf("?token=: %d Location %q, want 303 to /?x=1", resp.StatusCode, resp.Header.Get("Location"))
	}
	cookies := resp.Cookies()
	if len(cookies) != 1 || cookies[0].Name != cookieName || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie: %+v", cookies)
	}
	hdr := http.Header{"Host": remote["Host"], "Cookie": {cookies[0].String()}}
	if resp := do(t, h.cons, "GET", "/", hdr, nil); resp.StatusCode != 200 {
		t.Errorf("page with the cookie: %d", resp.StatusCode)
	}
}

// TestTokenOption: Options.Token alone still makes the rule, cookie login
// included.
func TestTokenOption(t *testing.T) {
	h := newTestHost(t, Options{Token: testToken})
	if resp := do(t, h.cons, "GET", "/api/status", nil, nil); resp.StatusCode != 401 {
		t.Errorf("no token: %d, want 401", resp.StatusCode)
	}
	if resp := do(t, h.cons, "GET", "/api/status", http.Header{"Authorization": {"Bearer " + testToken}}, nil); resp.StatusCode != 200 {
		t.Errorf("bearer: %d, want 200", resp.StatusCode)
	}
	resp := do(t, h.cons, "GET", "/?token="+testToken, nil, nil)
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 || resp.Cookies()[0].Name != CookieName {
		t.Errorf("?token=: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
}

// TestShortTokenFailsClosed: a console given a token too short answers
// nothing but the error, which does not show the token.
func TestShortTokenFailsClosed(t *testing.T) {
	h := newTestHost(t, Options{Token: "s3cret"})
	for _, hdr := range []http.Header{nil, {"Authorization": {"Bearer s3cret"}}} {
		var e apiError
		resp := do(t, h.cons, "GET", "/api/status", hdr, &e)
		if resp.StatusCode != 500 || !strings.Contains(e.Error, "openssl rand") || strings.Contains(e.Error, "s3cret") {
			t.Errorf("short token: %d %q, want 500 naming the fix, without the token", resp.StatusCode, e.Error)
		}
	}
}

func TestLoopbackHostAndOrigin(t *testing.T) {
	h := newTestHost(t, Options{})
	h.add("alpha", 2).rec.Expect(t, wait, conn.Established)
	for _, tc := range []struct {
		name, method, target string
		hdr                  http.Header
		code                 int
	}{
		{"loopback ip", "GET", "/api/status", http.Header{"Host": {"127.0.0.1:7777"}}, 200},
		{"localhost", "GET", "/api/status", http.Header{"Host": {"localhost:7777"}}, 200},
		{"ipv6 loopback", "GET", "/api/status", http.Header{"Host": {"[::1]:7777"}}, 200},
		{"rebound name", "GET", "/api/status", http.Header{"Host": {"evil.example:7777"}}, 403},
		{"lan address", "GET", "/", http.Header{"Host": {"192.168.1.2:7777"}}, 403},
		{"same-origin post", "POST", "/api/reload", http.Header{"Origin": {"http://127.0.0.1:7777"}}, 200},
		{"post without origin (a command)", "POST", "/api/reload", nil, 200},
		{"cross-origin post", "POST", "/api/reload", http.Header{"Origin": {"http://evil.example"}}, 403},
		{"cross-origin reconnect", "POST", "/api/reconnect", http.Header{"Origin": {"null"}}, 403},
		{"cross-origin read", "GET", "/api/status", http.Header{"Origin": {"http://evil.example"}}, 403},
		{"cross-site post without origin", "POST", "/api/reload", http.Header{"Sec-Fetch-Site": {"cross-site"}}, 403},
	} {
		var e apiError
		var out any = &e
		if tc.code == 200 {
			out = nil
		}
		resp := do(t, h.cons, tc.method, tc.target, tc.hdr, out)
		if resp.StatusCode != tc.code {
			t.Errorf("%s: %d %q, want %d", tc.name, resp.StatusCode, e.Error, tc.code)
		}
		h.clk.Add(ReconnectInterval) // no refusal here is the rate limit's
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.reloads != 2 {
		t.Errorf("reloads = %d, want 2 (the refused ones must not reach the host)", h.reloads)
	}
}
