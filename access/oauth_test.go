package access

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

const resource = "https://mcp.example.com/mcp"

// oauthRule returns a rule for an in-process issuer, on a mock clock at
// the real time (go-sdk's RequireBearerToken reads the real clock).
func oauthRule(t *testing.T, is *issuer, scopes ...string) (*Rule, *clock.Mock) {
	t.Helper()
	clk := clock.NewMock()
	clk.Set(time.Now())
	return mustRule(t, Config{Clock: clk, OAuth: &OAuth{
		Issuer: is.srv.URL, ResourceURL: resource, Scopes: scopes, HTTPClient: is.srv.Client(),
	}}), clk
}

func bearerHdr(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }

func TestOAuthTokens(t *testing.T) {
	is := newIssuer(t, false)
	rule, clk := oauthRule(t, is, "mcp:tools")
	h := rule.Wrap(echoSubject)
	now := clk.Now()
	valid := is.claims(resource, now)
	// with returns valid with the given claims set (nil: removed).
	with := func(kv ...any) jwt.MapClaims {
		c := jwt.MapClaims{}
		for k, v := range valid {
			c[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(c, kv[i].(string))
			} else {
				c[kv[i].(string)] = kv[i+1]
			}
		}
		return c
	}
	hs256, err := jwt.NewWithClaims(jwt.SigningMethodHS256, valid).SignedString([]byte("a shared secret"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		tok   string
		code  int
		error string // the WWW-Authenticate error param
		text  string // in the body
	}{
		{"valid", is.sign("k1", valid), 200, "", "subject=oauth:sub:alice"},
		{"aud array", is.sign("k1", with("aud", []string{"other", resource})), 200, "", "subject=oauth:sub:alice"},
		{"scp array", is.sign("k1", with("scope", nil, "scp", []string{"mcp:tools"})), 200, "", "subject=oauth:sub:alice"},
		{"no sub: client id", is.sign("k1", with("sub", nil, "client_id", "robot")), 200, "", "subject=oauth:client:robot"},
		// Each kind of subject in its own namespace: a sub of "token" is
		// not the static token's subject, nor "client:X" a client id's.
		{"sub token", is.sign("k1", with("sub", "token")), 200, "", "subject=oauth:sub:token"},
		{"sub client:robot", is.sign("k1", with("sub", "client:robot")), 200, "", "subject=oauth:sub:client:robot"},
		{"neither sub nor client id", is.sign("k1", with("sub", nil)), 401, "invalid_token", "neither a subject (sub) nor a client (client_id)"},
		{"empty sub", is.sign("k1", with("sub", "")), 401, "invalid_token", "neither a subject"},
		{"expired", is.sign("k1", with("exp", now.Add(-time.Hour).Unix())), 401, "invalid_token", "expired"},
		{"expired within leeway", is.sign("k1", with("exp", now.Add(-10*time.Second).Unix())), 200, "", "subject=oauth:sub:alice"},
		{"no exp", is.sign("k1", with("exp", nil)), 401, "invalid_token", "lacks a required claim (exp)"},
		{"no aud", is.sign("k1", with("aud", nil)), 401, "invalid_token", "lacks aud"},
		{"typ at+jwt", signTyp(t, is, "at+jwt", valid), 200, "", "subject=oauth:sub:alice"},
		{"typ application/at+jwt", signTyp(t, is, "application/at+jwt", valid), 200, "", "subject=oauth:sub:alice"},
		{"typ id token", signTyp(t, is, "id+jwt", valid), 401, "invalid_token", "typ"},
		{"typ not a string", signTyp(t, is, 7, valid), 401, "invalid_token", "typ"},
		{"not yet valid", is.sign("k1", with("nbf", now.Add(time.Hour).Unix())), 401, "invalid_token", "not valid yet"},
		{"wrong audience", is.sign("k1", with("aud", "https://other.example/mcp")), 401, "invalid_token", "aud"},
		{"wrong issuer", is.sign("k1", with("iss", "https://evil.example")), 401, "invalid_token", "iss"},
		{"bad signature", signWith(t, "k1", newKey(t), valid), 401, "invalid_token", "signature"},
		{"hmac token", hs256, 401, "invalid_token", ""},
		{"not a jwt", "not-a-jwt-at-all", 401, "invalid_token", "not a JWT"},
		{"missing scope", is.sign("k1", with("scope", "other")), 403, "insufficient_scope", "mcp:tools"},
	} {
		rw := req{hdr: bearerHdr(tc.tok)}.send(t, h)
		if rw.Code != tc.code || !strings.Contains(rw.Body.String(), tc.text) {
			t.Errorf("%s: %d %s, want %d with %q", tc.name, rw.Code, rw.Body, tc.code, tc.text)
			continue
		}
		if strings.Contains(rw.Body.String(), tc.tok) {
			t.Errorf("%s: the answer shows the token", tc.name)
		}
		if tc.code == 200 {
			continue
		}
		ch := challenge(t, rw)
		if ch.Params["error"] != tc.error || ch.Params["scope"] != "mcp:tools" ||
			ch.Params["resource_metadata"] != "https://mcp.example.com/.well-known/oauth-protected-resource/mcp" {
			t.Errorf("%s: challenge %+v", tc.name, ch)
		}
	}
	// No token at all: the challenge sends the client to the metadata.
	rw := req{}.send(t, h)
	if ch := challenge(t, rw); rw.Code != 401 || ch.Params["error"] != "" || ch.Params["resource_metadata"] == "" {
		t.Errorf("no token: %d %+v", rw.Code, ch)
	}
	if n := is.jwksGet.Load(); n != 1 {
		t.Errorf("the key set was fetched %d times, want once (cached)", n)
	}
}

// signTyp signs c with the issuer's key k1 and the JOSE header typ.
func signTyp(t *testing.T, is *issuer, typ any, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	tok.Header["kid"] = "k1"
	tok.Header["typ"] = typ
	is.mu.Lock()
	k := is.keys["k1"]
	is.mu.Unlock()
	s, err := tok.SignedString(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func challenge(t *testing.T, rw *httptest.ResponseRecorder) oauthex.Challenge {
	t.Helper()
	chs, err := oauthex.ParseWWWAuthenticate(rw.Header().Values("WWW-Authenticate"))
	if err != nil || len(chs) != 1 || chs[0].Scheme != "bearer" {
		t.Fatalf("WWW-Authenticate %q: %v %+v", rw.Header().Values("WWW-Authenticate"), err, chs)
	}
	return chs[0]
}

// TestJWKSRefetch: a token from an unknown key fetches the key set again,
// at most once a JWKSRefetchInterval; a rotated key is found then.
func TestJWKSRefetch(t *testing.T) {
	is := newIssuer(t, true) // discovered through openid-configuration
	rule, clk := oauthRule(t, is)
	h := rule.Wrap(echoSubject)
	if rw := (req{hdr: bearerHdr(is.sign("k1", is.claims(resource, clk.Now())))}).send(t, h); rw.Code != 200 {
		t.Fatalf("first token: %d %s", rw.Code, rw.Body)
	}
	is.addKey("k2") // rotated in, but within the interval
	forged := signWith(t, "k9", newKey(t), is.claims(resource, clk.Now()))
	for i := range 5 {
		if rw := (req{hdr: bearerHdr(forged)}).send(t, h); rw.Code != 401 || !strings.Contains(rw.Body.String(), "kid") {
			t.Errorf("unknown kid %d: %d %s", i, rw.Code, rw.Body)
		}
	}
	if n := is.jwksGet.Load(); n != 1 {
		t.Errorf("after five unknown kids within the interval: %d fetches, want 1", n)
	}
	clk.Add(JWKSRefetchInterval)
	if rw := (req{hdr: bearerHdr(is.sign("k2", is.claims(resource, clk.Now())))}).send(t, h); rw.Code != 200 {
		t.Errorf("rotated key after the interval: %d %s", rw.Code, rw.Body)
	}
	if n := is.jwksGet.Load(); n != 2 {
		t.Errorf("after the interval: %d fetches, want 2", n)
	}
}

func TestIssuerUnavailable(t *testing.T) {
	is := newIssuer(t, false)
	clk := clock.NewMock()
	clk.Set(time.Now())
	tok := is.sign("k1", is.claims(resource, clk.Now()))
	url := is.srv.URL
	is.srv.Close()
	h := mustRule(t, Config{Clock: clk, OAuth: &OAuth{Issuer: url, ResourceURL: resource}}).Wrap(echoSubject)
	rw := req{hdr: bearerHdr(tok)}.send(t, h)
	if rw.Code != http.StatusServiceUnavailable || !strings.Contains(errorOf(t, rw), url) {
		t.Errorf("issuer down: %d %s, want 503 naming the issuer", rw.Code, rw.Body)
	}
}

func TestProtectedResourceMetadata(t *testing.T) {
	is := newIssuer(t, false)
	rule, _ := oauthRule(t, is, "mcp:tools")
	h := rule.Wrap(echoSubject)
	want := oauthex.ProtectedResourceMetadata{
		Resource: resource, AuthorizationServers: []string{is.srv.URL},
		ScopesSupported: []string{"mcp:tools"}, BearerMethodsSupported: []string{"header"},
	}
	for _, p := range []string{ProtectedResourcePath + "/mcp", ProtectedResourcePath} {
		rw := req{target: p, hdr: http.Header{"Origin": {"https://inspector.example"}}}.send(t, h)
		if rw.Code != 200 {
			t.Errorf("GET %s: %d %s", p, rw.Code, rw.Body)
			continue
		}
		var got oauthex.ProtectedResourceMetadata
		if err := json.Unmarshal(rw.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("GET %s (-want +got):\n%s", p, d)
		}
	}
	// The Host rule still applies to the metadata.
	if rw := (req{target: ProtectedResourcePath, host: "rebind.evil.example"}).send(t, h); rw.Code != 403 {
		t.Errorf("metadata on a rebound name: %d", rw.Code)
	}
	// Without OAuth the path is an ordinary, authenticated one.
	tokenOnly := mustRule(t, Config{Token: goodToken}).Wrap(echoSubject)
	if rw := (req{target: ProtectedResourcePath}).send(t, tokenOnly); rw.Code != 401 {
		t.Errorf("metadata path without OAuth: %d, want 401", rw.Code)
	}
}

func TestOAuthConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		o    OAuth
		with string
	}{
		{OAuth{ResourceURL: resource}, "OAuth.Issuer is required"},
		{OAuth{Issuer: "http://auth.example.com", ResourceURL: resource}, "https"},
		{OAuth{Issuer: "auth.example.com", ResourceURL: resource}, "absolute"},
		{OAuth{Issuer: "https://auth.example.com"}, "OAuth.ResourceURL is required"},
		{OAuth{Issuer: "https://auth.example.com", ResourceURL: resource, Scopes: []string{"a b"}}, "OAuth.Scopes"},
		{OAuth{Issuer: "https://auth.example.com", ResourceURL: resource, JWKSURL: "ftp://x"}, "OAuth.JWKSURL"},
	} {
		_, err := New(Config{OAuth: &tc.o})
		if err == nil || !strings.Contains(err.Error(), tc.with) {
			t.Errorf("%+v: %v, want an error with %q", tc.o, err, tc.with)
		}
	}
}

// recordingTransport sends loopback requests on and answers every other
// one itself, recording it: the test never leaves loopback, and sees
// whether a redirect was followed.
type recordingTransport struct {
	mu   sync.Mutex
	seen []string
}

func (rt *recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if loopbackName(r.URL.Hostname()) {
		return http.DefaultTransport.RoundTrip(r)
	}
	rt.mu.Lock()
	rt.seen = append(rt.seen, r.URL.String())
	rt.mu.Unlock()
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(`{"keys":[]}`)), Header: http.Header{}, Request: r}, nil
}

// TestJWKSRedirectsPassTheURLRule: a key set (or metadata) answering 307
// to plain http on another host is not followed: every hop passes the
// rule of the issuer's URL. A redirect on loopback still is.
func TestJWKSRedirectsPassTheURLRule(t *testing.T) {
	is := newIssuer(t, false)
	mux := http.NewServeMux()
	mux.HandleFunc("/jwks-away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://keys.evil.example/jwks", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/jwks-local", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, is.srv.URL+"/jwks", http.StatusTemporaryRedirect)
	})
	redirector := httptest.NewServer(mux)
	defer redirector.Close()
	for _, tc := range []struct {
		path string
		code int
	}{{"/jwks-away", 503}, {"/jwks-local", 200}} {
		rt := &recordingTransport{}
		clk := clock.NewMock()
		clk.Set(time.Now())
		rule := mustRule(t, Config{Clock: clk, OAuth: &OAuth{Issuer: is.srv.URL, ResourceURL: resource,
			JWKSURL: redirector.URL + tc.path, HTTPClient: &http.Client{Transport: rt}}})
		rw := req{hdr: bearerHdr(is.sign("k1", is.claims(resource, clk.Now())))}.send(t, rule.Wrap(echoSubject))
		if rw.Code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.path, rw.Code, rw.Body, tc.code)
		}
		if len(rt.seen) > 0 {
			t.Errorf("%s: the fetch followed a redirect to %v", tc.path, rt.seen)
		}
	}
}

// TestForbiddenOAuth: on a surface whose OAuth is Forbidden (the console
// without -console-oauth-scope), a valid token of the issuer gets 403,
// the static token works, anything else 401; no metadata is published.
func TestForbiddenOAuth(t *testing.T) {
	is := newIssuer(t, false)
	clk := clock.NewMock()
	clk.Set(time.Now())
	rule := mustRule(t, Config{Token: goodToken, Clock: clk, OAuth: &OAuth{
		Issuer: is.srv.URL, ResourceURL: resource, HTTPClient: is.srv.Client(), Forbidden: true}})
	h := rule.Wrap(echoSubject)
	user := is.sign("k1", is.claims(resource, clk.Now()))
	for _, tc := range []struct {
		name string
		r    req
		code int
	}{
		{"an MCP user's token", req{hdr: bearerHdr(user)}, 403},
		{"the operator's token", req{hdr: bearerHdr(goodToken)}, 200},
		{"a wrong token", req{hdr: bearerHdr(strings.Repeat("x", 32))}, 401},
		{"a forged JWT", req{hdr: bearerHdr(signWith(t, "k1", newKey(t), is.claims(resource, clk.Now())))}, 401},
		{"no token", req{}, 401},
		{"metadata", req{target: ProtectedResourcePath}, 401},
	} {
		rw := tc.r.send(t, h)
		if rw.Code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, rw.Code, rw.Body, tc.code)
		}
		if tc.code == 403 && !strings.Contains(errorOf(t, rw), "operator") {
			t.Errorf("%s: %s, want the refusal to name the operator", tc.name, rw.Body)
		}
	}
}
