package access

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpServer is a one-tool MCP server behind rule, over real HTTP; the
// tool answers with the token's user as go-sdk sees it.
func mcpServer(t *testing.T, rule *Rule) *httptest.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		user := ""
		if ti := req.Extra.TokenInfo; ti != nil {
			user = ti.UserID
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text + " user=" + user}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(rule.Wrap(h))
	t.Cleanup(ts.Close)
	return ts
}

// headerClient adds hdr to every request.
type headerClient struct {
	hdr  http.Header
	next http.RoundTripper
}

func (c headerClient) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range c.hdr {
		r.Header[k] = v
	}
	return c.next.RoundTrip(r)
}

// callEcho connects to ts with hdr, initializes, and calls the tool.
func callEcho(t *testing.T, ts *httptest.Server, hdr http.Header) (string, error) {
	t.Helper()
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	hc := &http.Client{Transport: headerClient{hdr: hdr, next: ts.Client().Transport}}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return "", err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		return "", err
	}
	return res.Content[0].(*mcp.TextContent).Text, nil
}

// rawPost sends an initialize request by hand and returns the answer.
func rawPost(t *testing.T, ts *httptest.Server, hdr http.Header) *http.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	r, err := http.NewRequest("POST", ts.URL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		r.Header[k] = v
	}
	resp, err := ts.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestMCPEndpointWithToken is the attack on an unprotected -listen: a
// client without the token, or a web page at another origin, reaches no
// tool; one with the token calls it.
func TestMCPEndpointWithToken(t *testing.T) {
	ts := mcpServer(t, mustRule(t, Config{Token: goodToken, AllowOrigins: []string{"https://app.example.com"}}))
	if resp := rawPost(t, ts, nil); resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("initialize without a token: %d %q, want 401 with a Bearer challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if _, err := callEcho(t, ts, nil); err == nil {
		t.Error("a client without the token called a tool")
	}
	auth := http.Header{"Authorization": {"Bearer " + goodToken}}
	if got, err := callEcho(t, ts, auth); err != nil || got != "hi user=token" {
		t.Errorf("with the token: %q, %v", got, err)
	}
	evil := http.Header{"Authorization": auth["Authorization"], "Origin": {"https://evil.example"}}
	if resp := rawPost(t, ts, evil); resp.StatusCode != 403 {
		t.Errorf("initialize from https://evil.example: %d, want 403", resp.StatusCode)
	}
	if _, err := callEcho(t, ts, evil); err == nil {
		t.Error("a page at https://evil.example called a tool")
	}
	listed := http.Header{"Authorization": auth["Authorization"], "Origin": {"https://app.example.com"}}
	if got, err := callEcho(t, ts, listed); err != nil || got != "hi user=token" {
		t.Errorf("from a listed origin: %q, %v", got, err)
	}
}

// TestMCPEndpointWithOAuth: the SDK sees the token's user, so its
// sessions are bound to it.
func TestMCPEndpointWithOAuth(t *testing.T) {
	is := newIssuer(t, false)
	rule, clk := oauthRule(t, is, "mcp:tools")
	ts := mcpServer(t, rule)
	if resp := rawPost(t, ts, nil); resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Errorf("initialize without a token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	tok := is.sign("k1", is.claims(resource, clk.Now()))
	if got, err := callEcho(t, ts, http.Header{"Authorization": {"Bearer " + tok}}); err != nil || got != "hi user=oauth:sub:alice" {
		t.Errorf("with a valid access token: %q, %v", got, err)
	}
}

// TestSessionsBoundToTheSubjectsKind: a session opened by a JWT whose sub
// is "token" cannot be used with the static token (whose subject that
// string was), nor one of sub "client:robot" by a token of client_id
// robot; each is usable by its own opener.
func TestSessionsBoundToTheSubjectsKind(t *testing.T) {
	is := newIssuer(t, false)
	clk := clock.NewMock()
	clk.Set(time.Now())
	rule := mustRule(t, Config{Token: goodToken, Clock: clk, OAuth: &OAuth{
		Issuer: is.srv.URL, ResourceURL: resource, HTTPClient: is.srv.Client()}})
	ts := mcpServer(t, rule)
	claims := func(kv ...string) jwt.MapClaims {
		c := is.claims(resource, clk.Now())
		delete(c, "sub")
		for i := 0; i+1 < len(kv); i += 2 {
			c[kv[i]] = kv[i+1]
		}
		return c
	}
	for _, tc := range []struct{ name, opener, other string }{
		{"sub token / the static token", is.sign("k1", claims("sub", "token")), goodToken},
		{"the static token / sub token", goodToken, is.sign("k1", claims("sub", "token"))},
		{"sub client:robot / client_id robot", is.sign("k1", claims("sub", "client:robot")), is.sign("k1", claims("client_id", "robot"))},
	} {
		resp := rawPost(t, ts, http.Header{"Authorization": {"Bearer " + tc.opener}})
		id := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != 200 || id == "" {
			t.Fatalf("%s: initialize: %d, session %q", tc.name, resp.StatusCode, id)
		}
		if code := sessionPost(t, ts, id, tc.opener); code != http.StatusAccepted {
			t.Errorf("%s: the opener's own request: %d, want 202", tc.name, code)
		}
		if code := sessionPost(t, ts, id, tc.other); code != http.StatusForbidden {
			t.Errorf("%s: another subject's request on the session: %d, want 403", tc.name, code)
		}
		if code := sessionRequest(t, ts, "DELETE", id, tc.opener, ""); code != http.StatusNoContent {
			t.Errorf("%s: closing the session: %d", tc.name, code)
		}
	}
}

// sessionPost sends notifications/initialized on session id with tok and
// returns the status.
func sessionPost(t *testing.T, ts *httptest.Server, id, tok string) int {
	t.Helper()
	return sessionRequest(t, ts, "POST", id, tok, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func sessionRequest(t *testing.T, ts *httptest.Server, method, id, tok, body string) int {
	t.Helper()
	r, err := http.NewRequest(method, ts.URL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Mcp-Session-Id", id)
	r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	r.Header.Set("Authorization", "Bearer "+tok)
	resp, err := ts.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestCORSForAllowedOrigins: a browser client at an -allow-origin origin
// can work: its preflight is answered 204 without credentials (it used
// to get 401), naming what it may send, and the answers it reads carry
// Access-Control-Allow-Origin and expose Mcp-Session-Id. Another origin's
// preflight is still refused, and no CORS header is given to it.
func TestCORSForAllowedOrigins(t *testing.T) {
	const app = "https://app.example.com"
	ts := mcpServer(t, mustRule(t, Config{Token: goodToken, AllowOrigins: []string{app}}))
	preflight := func(origin string) *http.Response {
		r, _ := http.NewRequest("OPTIONS", ts.URL, nil)
		r.Header.Set("Origin", origin)
		r.Header.Set("Access-Control-Request-Method", "POST")
		r.Header.Set("Access-Control-Request-Headers", "authorization, content-type, mcp-protocol-version")
		resp, err := ts.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := preflight(app)
	h := resp.Header
	if resp.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != app ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Mcp-Protocol-Version") {
		t.Errorf("preflight from %s: %d %v, want 204 allowing POST with Authorization", app, resp.StatusCode, h)
	}
	if resp := preflight("https://evil.example"); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from evil.example: %d %v, want 403 without CORS headers", resp.StatusCode, resp.Header)
	}
	resp = rawPost(t, ts, http.Header{"Authorization": {"Bearer " + goodToken}, "Origin": {app}})
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != app ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") {
		t.Errorf("initialize from %s: %d %v, want 200 readable by the page, Mcp-Session-Id exposed", app, resp.StatusCode, resp.Header)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		sessionRequest(t, ts, "DELETE", id, goodToken, "")
	}
	resp = rawPost(t, ts, http.Header{"Origin": {app}})
	if resp.StatusCode != 401 || resp.Header.Get("Access-Control-Allow-Origin") != app {
		t.Errorf("without the token from %s: %d, Allow-Origin %q; want a 401 the page can read", app, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
}

// TestOperatorIsTheStaticTokenOnly is the attack of an OAuth client that
// gets an access token whose subject is "token", the static token's
// Subject: it must not be taken for the operator, who passes every
// per-caller rule.
func TestOperatorIsTheStaticTokenOnly(t *testing.T) {
	is := newIssuer(t, false)
	clk := clock.NewMock()
	clk.Set(time.Now())
	rule := mustRule(t, Config{Token: goodToken, Clock: clk, OAuth: &OAuth{
		Issuer: is.srv.URL, ResourceURL: resource, HTTPClient: is.srv.Client(),
	}})
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		ti := req.Extra.TokenInfo
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s user=%s operator=%v", a.Text, ti.UserID, Operator(ti))}}}, nil, nil
	})
	ts := httptest.NewServer(rule.Wrap(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	defer ts.Close()

	forged := is.claims(resource, clk.Now())
	forged["sub"] = SubjectToken
	for _, tc := range []struct {
		name, bearer, want string
	}{
		{"static token", goodToken, "hi user=token operator=true"},
		{"OAuth token with sub \"token\"", is.sign("k1", forged), "hi user=oauth:sub:token operator=false"},
		{"OAuth token", is.sign("k1", is.claims(resource, clk.Now())), "hi user=oauth:sub:alice operator=false"},
	} {
		got, err := callEcho(t, ts, bearerHdr(tc.bearer))
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if Operator(nil) || Operator(&auth.TokenInfo{UserID: SubjectToken}) {
		t.Error("a TokenInfo this package did not make is the operator")
	}
}
