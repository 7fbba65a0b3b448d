package access

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// echoSubject answers 200 with the request's Subject.
var echoSubject = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Write([]byte("subject=" + Subject(r.Context())))
})

// req is one request for a rule: Host, headers, and the connection's
// local address ("" = none in the context, as for an in-process call).
type req struct {
	method, target, host, local string
	hdr                         http.Header
	tls                         bool
}

func (q req) send(t *testing.T, h http.Handler) *httptest.ResponseRecorder {
	t.Helper()
	method := q.method
	if method == "" {
		method = "GET"
	}
	target := q.target
	if target == "" {
		target = "/mcp"
	}
	r := httptest.NewRequest(method, target, nil)
	r.Host = q.host
	if r.Host == "" {
		r.Host = "127.0.0.1:8080"
	}
	for k, v := range q.hdr {
		r.Header[k] = v
	}
	if q.local != "" {
		addr, err := net.ResolveTCPAddr("tcp", q.local)
		if err != nil {
			t.Fatal(err)
		}
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, addr))
	}
	if q.tls {
		r.TLS = &tls.ConnectionState{}
	} else {
		r.TLS = nil
	}
	rw := httptest.NewRecorder()
	h.ServeHTTP(rw, r)
	return rw
}

func mustRule(t *testing.T, cfg Config) *Rule {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// errorOf decodes a refusal's JSON body.
func errorOf(t *testing.T, rw *httptest.ResponseRecorder) string {
	t.Helper()
	if ct := rw.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("refusal %d with Content-Type %q, want application/json; body %s", rw.Code, ct, rw.Body)
	}
	var e errorBody
	if err := json.Unmarshal(rw.Body.Bytes(), &e); err != nil {
		t.Fatalf("refusal body %s: %v", rw.Body, err)
	}
	return e.Error
}

func TestHostRule(t *testing.T) {
	h := mustRule(t, Config{Token: goodToken, AllowHosts: []string{"mcp.example.com", "other.example:8443"}}).Wrap(echoSubject)
	auth := http.Header{"Authorization": {"Bearer " + goodToken}}
	const lan = "192.0.2.10:8080" // a non-loopback local address
	for _, tc := range []struct {
		name string
		req  req
		code int
	}{
		{"loopback name on loopback", req{host: "localhost:8080", local: "127.0.0.1:8080", hdr: auth}, 200},
		{"loopback ip on loopback", req{host: "127.0.0.1:8080", local: "127.0.0.1:8080", hdr: auth}, 200},
		{"ipv6 loopback", req{host: "[::1]:8080", local: "[::1]:8080", hdr: auth}, 200},
		{"rebound name on loopback", req{host: "rebind.evil.example:8080", local: "127.0.0.1:8080", hdr: auth}, 403},
		{"rebound name on lan", req{host: "rebind.evil.example", local: lan, hdr: auth}, 403},
		{"rebound name, no token either", req{host: "rebind.evil.example", local: lan}, 403},
		{"own address on lan", req{host: lan, local: lan, hdr: auth}, 200},
		{"own address without port", req{host: "192.0.2.10", local: lan, hdr: auth}, 200},
		{"another address on lan", req{host: "192.0.2.11:8080", local: lan, hdr: auth}, 403},
		{"loopback name on lan", req{host: "localhost:8080", local: lan, hdr: auth}, 403},
		{"listed name", req{host: "MCP.example.com", local: lan, hdr: auth}, 200},
		{"listed name with port", req{host: "mcp.example.com:443", local: lan, hdr: auth}, 200},
		{"listed name:port", req{host: "other.example:8443", local: lan, hdr: auth}, 200},
		{"listed name, other port", req{host: "other.example:9000", local: lan, hdr: auth}, 403},
		{"in process, loopback name", req{host: "127.0.0.1:8080", hdr: auth}, 200},
		{"in process, other name", req{host: "rebind.evil.example", hdr: auth}, 403},
	} {
		rw := tc.req.send(t, h)
		if rw.Code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, rw.Code, rw.Body, tc.code)
			continue
		}
		if tc.code == 403 {
			if msg := errorOf(t, rw); !strings.Contains(msg, "-allow-host") {
				t.Errorf("%s: %q does not name -allow-host", tc.name, msg)
			}
		}
	}
}

func TestOriginRule(t *testing.T) {
	h := mustRule(t, Config{Token: goodToken, AllowOrigins: []string{"https://app.example.com", "http://localhost:6274/"}}).Wrap(echoSubject)
	with := func(origin string, more ...string) http.Header {
		hdr := http.Header{"Authorization": {"Bearer " + goodToken}}
		if origin != "" {
			hdr.Set("Origin", origin)
		}
		for i := 0; i+1 < len(more); i += 2 {
			hdr.Set(more[i], more[i+1])
		}
		return hdr
	}
	for _, tc := range []struct {
		name string
		req  req
		code int
	}{
		{"no origin (not a browser)", req{method: "POST", hdr: with("")}, 200},
		{"evil origin, POST", req{method: "POST", hdr: with("https://evil.example")}, 403},
		{"evil origin, GET too", req{method: "GET", hdr: with("https://evil.example")}, 403},
		{"evil origin, DELETE", req{method: "DELETE", hdr: with("https://evil.example")}, 403},
		{"null origin", req{method: "POST", hdr: with("null")}, 403},
		{"own origin", req{method: "POST", hdr: with("http://127.0.0.1:8080")}, 200},
		{"own host, other scheme", req{method: "POST", hdr: with("https://127.0.0.1:8080")}, 403},
		{"own origin over TLS", req{method: "POST", host: "127.0.0.1", tls: true, hdr: with("https://127.0.0.1:443")}, 200},
		{"listed origin", req{method: "POST", hdr: with("https://app.example.com")}, 200},
		{"listed origin, default port", req{method: "POST", hdr: with("https://app.example.com:443")}, 200},
		{"listed origin with slash", req{method: "POST", hdr: with("http://localhost:6274")}, 200},
		{"listed host, other scheme", req{method: "POST", hdr: with("http://app.example.com")}, 403},
		{"cross-site fetch metadata", req{method: "POST", hdr: with("", "Sec-Fetch-Site", "cross-site")}, 403},
		{"same-origin fetch metadata", req{method: "POST", hdr: with("", "Sec-Fetch-Site", "same-origin")}, 200},
		{"cross-site navigation GET", req{method: "GET", hdr: with("", "Sec-Fetch-Site", "cross-site")}, 200},
	} {
		rw := tc.req.send(t, h)
		if rw.Code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, rw.Code, rw.Body, tc.code)
			continue
		}
		if tc.code == 403 {
			if msg := errorOf(t, rw); !strings.Contains(msg, "-allow-origin") {
				t.Errorf("%s: %q does not name -allow-origin", tc.name, msg)
			}
		}
	}
	if _, err := New(Config{AllowOrigins: []string{"app.example.com"}}); err == nil || !strings.Contains(err.Error(), "scheme://host") {
		t.Errorf("an origin without scheme: %v, want an error naming scheme://host[:port]", err)
	}
	if _, err := New(Config{AllowOrigins: []string{"https://app.example.com/path"}}); err == nil {
		t.Error("an origin with a path was accepted")
	}
	if _, err := New(Config{AllowHosts: []string{"https://mcp.example.com"}}); err == nil || !strings.Contains(err.Error(), "-allow-host") {
		t.Errorf("an -allow-host URL: %v, want an error naming -allow-host", err)
	}
}

func TestTokenRule(t *testing.T) {
	h := mustRule(t, Config{Token: goodToken}).Wrap(echoSubject)
	for _, tc := range []struct {
		name    string
		hdr     http.Header
		code    int
		subject string
	}{
		{"no token", nil, 401, ""},
		{"wrong token", http.Header{"Authorization": {"Bearer " + strings.Repeat("x", len(goodToken))}}, 401, ""},
		{"prefix of the token", http.Header{"Authorization": {"Bearer " + goodToken[:20]}}, 401, ""},
		{"basic auth", http.Header{"Authorization": {"Basic " + goodToken}}, 401, ""},
		{"cookie without Config.Cookie", http.Header{"Cookie": {"mcpfsm_token=" + goodToken}}, 401, ""},
		{"bearer", http.Header{"Authorization": {"Bearer " + goodToken}}, 200, "token"},
		{"bearer, lower case scheme", http.Header{"Authorization": {"bearer " + goodToken}}, 200, "token"},
	} {
		rw := req{hdr: tc.hdr}.send(t, h)
		if rw.Code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, rw.Code, rw.Body, tc.code)
			continue
		}
		if tc.code == 401 {
			if got := rw.Header().Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
				t.Errorf("%s: WWW-Authenticate %q, want a Bearer challenge", tc.name, got)
			}
			if strings.Contains(rw.Body.String(), goodToken[:20]) {
				t.Errorf("%s: the answer shows the token: %s", tc.name, rw.Body)
			}
			continue
		}
		if got := rw.Body.String(); got != "subject="+tc.subject {
			t.Errorf("%s: %s, want subject=%s", tc.name, got, tc.subject)
		}
	}
	// Without a credential asked for (loopback only), no subject.
	open := mustRule(t, Config{}).Wrap(echoSubject)
	if rw := (req{}).send(t, open); rw.Code != 200 || rw.Body.String() != "subject=" {
		t.Errorf("open rule: %d %s, want 200 subject=", rw.Code, rw.Body)
	}
}

func TestCookieLogin(t *testing.T) {
	h := mustRule(t, Config{Token: goodToken, Cookie: "mcpfsm_token"}).Wrap(echoSubject)
	rw := req{target: "/?token=" + goodToken + "&x=1"}.send(t, h)
	if rw.Code != http.StatusSeeOther || rw.Header().Get("Location") != "/?x=1" {
		t.Fatalf("?token=: %d Location %q, want 303 to /?x=1", rw.Code, rw.Header().Get("Location"))
	}
	cookies := rw.Result().Cookies()
	if len(cookies) != 1 || cookies[0].Name != "mcpfsm_token" || !cookies[0].HttpOnly ||
		cookies[0].SameSite != http.SameSiteStrictMode || cookies[0].Secure {
		t.Fatalf("cookie: %+v, want HttpOnly SameSite=Strict, not Secure without TLS", cookies)
	}
	if rw := (req{target: "/", hdr: http.Header{"Cookie": {cookies[0].String()}}}).send(t, h); rw.Code != 200 || rw.Body.String() != "subject=token" {
		t.Errorf("with the cookie: %d %s", rw.Code, rw.Body)
	}
	rw = req{target: "/?token=" + goodToken, tls: true, host: "127.0.0.1"}.send(t, h)
	if c := rw.Result().Cookies(); len(c) != 1 || !c[0].Secure {
		t.Errorf("over TLS the cookie must be Secure: %+v", c)
	}
	for _, tc := range []req{
		{target: "/?token=" + strings.Repeat("y", len(goodToken))},
		{method: "POST", target: "/?token=" + goodToken},
		{hdr: http.Header{"Cookie": {"mcpfsm_token=" + strings.Repeat("y", len(goodToken))}}},
	} {
		if rw := tc.send(t, h); rw.Code != 401 || len(rw.Result().Cookies()) != 0 {
			t.Errorf("%s %s: %d, cookies %v; want 401 and none", tc.method, tc.target, rw.Code, rw.Result().Cookies())
		}
	}
	if _, err := New(Config{Cookie: "c"}); err == nil {
		t.Error("a cookie without a token was accepted")
	}
}

// TestCookieLoginRedirectsSameOrigin: over a real socket, the login of
// "GET //evil.example/?token=..." (and "/\evil.example") sends the
// browser to a path of its own origin, never to another host.
func TestCookieLoginRedirectsSameOrigin(t *testing.T) {
	ts := httptest.NewServer(mustRule(t, Config{Token: goodToken, Cookie: "mcpfsm_token"}).Wrap(echoSubject))
	defer ts.Close()
	for target, want := range map[string]string{
		"//evil.example/?token=" + goodToken:       "/evil.example/",
		"/\\evil.example/x?token=" + goodToken:     "/%5Cevil.example/x",
		"///evil.example?a=1&token=" + goodToken:   "/evil.example?a=1",
		"/status?token=" + goodToken + "&view=all": "/status?view=all",
	} {
		c, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, ts.Listener.Addr())
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err != nil {
			t.Fatalf("GET %s: %v", target, err)
		}
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != want {
			t.Errorf("GET %s: %d Location %q, want 303 to %q", target, resp.StatusCode, loc, want)
		}
	}
}
