package access

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
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
		{"valid", is.sign("k1", valid), 200, "", "subject=alice"},
		{"aud array", is.sign("k1", with("aud", []string{"other", resource})), 200, "", "subject=alice"},
		{"scp array", is.sign("k1", with("scope", nil, "scp", []string{"mcp:tools"})), 200, "", "subject=alice"},
		{"no sub: client id", is.sign("k1", with("sub", nil, "client_id", "robot")), 200, "", "subject=client:robot"},
		{"expired", is.sign("k1", with("exp", now.Add(-time.Hour).Unix())), 401, "invalid_token", "expired"},
		{"expired within leeway", is.sign("k1", with("exp", now.Add(-10*time.Second).Unix())), 200, "", "subject=alice"},
		{"no exp", is.sign("k1", with("exp", nil)), 401, "invalid_token", "exp"},
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
