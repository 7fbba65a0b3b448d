package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callerClient is one OAuth caller of serve, with the URL elicitations
// serve sent it.
type callerClient struct {
	*frontClient
	subject  string
	asked    chan *mcp.ElicitParams
	complete chan string
}

func connectCaller(t *testing.T, endpoint, token, subject string) *callerClient {
	t.Helper()
	c := &callerClient{subject: subject, asked: make(chan *mcp.ElicitParams, 8), complete: make(chan string, 8)}
	opts := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.asked <- req.Params
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
		ElicitationCompleteHandler: func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			c.complete <- req.Params.ElicitationID
		},
	}
	c.frontClient = connectWith(t, &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, opts, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	t.Cleanup(func() { _ = c.sess.Close() })
	return c
}

// consent follows authURL as the browser of user would: the fixture's
// authorization endpoint consents as user and redirects to serve's
// callback, which must be at callback. A tampered state is refused there
// first. It returns the redirect's URL.
func consent(t *testing.T, authURL, user, callback string) string {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string, header http.Header) (int, string) {
		req, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = header
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Location")
	}
	code, loc := get(authURL, http.Header{fixture.UserHeader: {user}})
	if code != http.StatusFound || !strings.HasPrefix(loc, callback+"?") {
		t.Fatalf("the authorization endpoint answered %d to %q; want a redirect to serve's %s", code, loc, callback)
	}
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	bad := *u
	q := bad.Query()
	q.Set("state", q.Get("state")+"x")
	bad.RawQuery = q.Encode()
	if code, _ := get(bad.String(), nil); code != http.StatusBadRequest {
		t.Errorf("a redirect with a tampered state got %d, want 400", code)
	}
	if code, _ := get(loc, nil); code != http.StatusOK {
		t.Fatalf("the redirect got %d, want 200", code)
	}
	if code, _ := get(loc, nil); code != http.StatusBadRequest {
		t.Errorf("the redirect used a second time got %d, want 400 (single use)", code)
	}
	return loc
}

// servePerCaller starts serve on a free loopback port with OAuth callers
// (issuer is) and one http server, notes, behind the fixture
// authorization server as, whose credential is each caller's own. It
// returns serve's resource and redirect URLs, its stderr and its MCP
// endpoint; credentials go to a state directory of the test's own. extra
// are more flags of serve.
func servePerCaller(t *testing.T, extra ...string) (as *fixture.AuthServer, is *testIssuer, resource, callback string, stderr *watcher, endpoint string) {
	t.Helper()
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	as = fixture.NewAuthServer(t)
	is = newTestIssuer(t)
	port := freeLoopbackPort(t)
	resource = "http://127.0.0.1:" + port + "/mcp"
	callback = "http://127.0.0.1:" + port + "/oauth/callback"
	cfg := writeConfig(t, obj{"mcpServers": obj{"notes": obj{"type": "http", "url": as.Resource}}})
	_, stderr, endpoint = serveListening(t, []string{"BROWSER="}, append([]string{"serve", "-config", cfg, "-listen", "127.0.0.1:" + port,
		"-oauth-issuer", is.URL, "-oauth-resource", resource, "-log-level", "debug"}, extra...)...)
	return as, is, resource, callback, stderr, endpoint
}

// noSignInSecret fails t if any of outs, the output of where, holds a
// token, code or verifier that as handed out.
func noSignInSecret(t *testing.T, as *fixture.AuthServer, where string, outs ...string) {
	t.Helper()
	all := strings.Join(outs, "\n")
	for _, s := range as.Secrets() {
		if strings.Contains(all, s) {
			t.Errorf("a token, code or verifier of the sign-in appears in %s", where)
			return
		}
	}
}

// freeLoopbackPort is a TCP port of 127.0.0.1 free a moment ago.
func freeLoopbackPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	return port
}

// With OAuth callers (-oauth-issuer), an http server that needs a sign-in
// is signed in to by each caller as itself (upstreamAuth "per-caller" is
// the default): a caller's first call is answered at once with its own
// authorization URL, which serve sends that caller alone as a URL
// elicitation and never prints; the redirect lands on serve's own
// address (/oauth/callback), where a tampered or reused state is refused;
// then the caller reaches the upstream with its own token, and the
// upstream sees each caller as itself, never the operator nor the other
// caller. No token, code or verifier reaches serve's output.
func TestServePerCallerSignIn(t *testing.T) {
	as, is, resource, callback, stderr, endpoint := servePerCaller(t)

	alice := connectCaller(t, endpoint, is.Token(t, resource, "alice", "mcp"), "alice")
	bob := connectCaller(t, endpoint, is.Token(t, resource, "bob", "mcp"), "bob")
	urls := map[string]string{}
	for _, c := range []*callerClient{alice, bob} {
		start := time.Now()
		text, isErr := c.call(t, "mcp__notes__whoami", "")
		if !isErr || !strings.Contains(text, as.Issuer+"/authorize?") || !strings.Contains(text, "sign in as yourself") {
			t.Fatalf("%s's call before its sign-in = %q (isError %v); want its authorization URL", c.subject, text, isErr)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s's call took %v; want it answered at once", c.subject, d)
		}
		var p *mcp.ElicitParams
		select {
		case p = <-c.asked:
		case <-time.After(limit):
			t.Fatalf("serve never asked %s to sign in; stderr:\n%s", c.subject, stderr)
		}
		if p.Mode != "url" || !strings.Contains(text, p.URL) {
			t.Fatalf("%s was asked %+v; want the URL its call's result names", c.subject, p)
		}
		urls[c.subject] = p.URL
		consent(t, p.URL, c.subject, callback)
		select {
		case id := <-c.complete:
			if id != p.ElicitationID {
				t.Errorf("%s: sign-in complete for %q, want %q", c.subject, id, p.ElicitationID)
			}
		case <-time.After(limit):
			t.Fatalf("serve never told %s its sign-in was complete; stderr:\n%s", c.subject, stderr)
		}
	}
	if urls["alice"] == urls["bob"] {
		t.Errorf("alice and bob were given one authorization URL")
	}
	for _, c := range []*callerClient{alice, bob} {
		select {
		case p := <-c.asked:
			t.Errorf("%s was asked to open another sign-in: %s", c.subject, p.URL)
		default:
		}
	}
	// Each caller's own instance leaves needs-authorization once its
	// credential is stored; a call answers as its caller.
	for _, c := range []*callerClient{alice, bob, alice} {
		deadline := time.Now().Add(limit)
		for {
			text, isErr := c.call(t, "mcp__notes__whoami", "")
			if !isErr {
				if text != "subject "+c.subject {
					t.Errorf("%s reached the upstream as %q", c.subject, text)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s's call after its sign-in = %q; stderr:\n%s", c.subject, text, stderr)
			}
			time.Sleep(50 * time.Millisecond) // the instance reconnects with the credential
		}
	}
	accepted := as.Accepted()
	if !slices.Contains(accepted, "alice") || !slices.Contains(accepted, "bob") {
		t.Errorf("the upstream accepted %v; want alice's and bob's tokens", accepted)
	}
	for _, sub := range accepted {
		if sub != "alice" && sub != "bob" {
			t.Errorf("the upstream accepted a token of %q: not a caller's own", sub)
		}
	}
	out := stderr.String()
	for _, u := range urls {
		if strings.Contains(out, u) {
			t.Errorf("a caller's authorization URL is on serve's stderr")
		}
	}
	noSignInSecret(t, as, "serve's stderr", out)
	if !strings.Contains(out, `server "notes" needs a sign-in by caller "oauth:sub:alice"`) {
		t.Errorf("stderr does not say alice's sign-in is asked for:\n%s", out)
	}
}

// With upstreamAuth {"tokenExchange": {...}}, serve trades each OAuth
// caller's own access token for one of the server's (RFC 8693): alice and
// bob reach the upstream each as itself without a sign-in, and a caller
// whose token the upstream's authorization server does not trust gets an
// error, not another caller's or the operator's token. No token reaches
// serve's output.
func TestServeTokenExchangePerCaller(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	as := fixture.NewAuthServer(t)
	is := newTestIssuer(t)
	port := freeLoopbackPort(t)
	resource := "http://127.0.0.1:" + port + "/mcp"
	cfg := writeConfig(t, obj{"mcpServers": obj{"notes": obj{"type": "http", "url": as.Resource,
		"upstreamAuth": obj{"tokenExchange": obj{"tokenUrl": as.Issuer + "/token", "issuer": as.Issuer, "clientId": "gateway"}}}}})
	_, stderr, endpoint := serveListening(t, []string{"BROWSER="}, "serve", "-config", cfg, "-listen", "127.0.0.1:"+port,
		"-oauth-issuer", is.URL, "-oauth-resource", resource, "-http", "127.0.0.1:0")
	addr := consoleAddr(t, stderr)

	tokens := map[string]string{}
	for _, sub := range []string{"alice", "bob", "mallory"} {
		tokens[sub] = is.Token(t, resource, sub, "mcp")
		if sub != "mallory" {
			as.TrustSubjectToken(tokens[sub], sub)
		}
	}
	for _, sub := range []string{"alice", "bob", "mallory", "alice"} {
		c := connectCaller(t, endpoint, tokens[sub], sub)
		start := time.Now()
		text, isErr := c.call(t, "mcp__notes__whoami", "")
		switch {
		case sub == "mallory" && (!isErr || !strings.Contains(text, "needs-authorization") && !strings.Contains(text, "sign-in required") ||
			!strings.Contains(text, "token exchange refused for notes (invalid_grant)") ||
			!strings.Contains(text, "trusts the callers' identity provider") || strings.Contains(text, "/authorize?")):
			t.Errorf("mallory, whose token is not trusted, got %q (isError %v); want a sign-in error naming the refused exchange and the fix, with no sign-in link", text, isErr)
		case sub == "mallory" && time.Since(start) > 5*time.Second:
			t.Errorf("mallory's call took %v; want it answered at once", time.Since(start))
		case sub != "mallory" && (isErr || text != "subject "+sub):
			t.Errorf("%s reached the upstream as %q (isError %v); want itself; stderr:\n%s", sub, text, isErr, stderr)
		}
	}
	if n := as.Exchanges(); n != 2 {
		t.Errorf("%d token exchanges; want 2 (alice's, kept for her second client, and bob's)", n)
	}
	// mallory's instance waits for a sign-in: no retries, no outage.
	st := consoleServerStatus(t, addr, madeToken(t, addr), "notes")
	if st.Instances["needs-authorization"] != 1 || st.Instances["failed-retrying"] != 0 {
		t.Errorf("the instances of notes by state: %v; want mallory's in needs-authorization, none failed-retrying", st.Instances)
	}
	for _, sub := range as.Accepted() {
		if sub != "alice" && sub != "bob" {
			t.Errorf("the upstream accepted a token of %q", sub)
		}
	}
	noSignInSecret(t, as, "serve's stderr", stderr.String())
}

// A server each OAuth caller signs in to as itself never uses the
// operator's credential, even when the operator has signed in to it
// (mcpfsm auth login): serve's shared instance of it holds no credential
// (needs-authorization, saying why, with no sign-in line of the
// operator's on stderr), a caller's own instance lists and calls its
// tools with the caller's token, and the upstream accepts no request
// carrying the operator's token.
func TestServePerCallerNeverOperatorsCredential(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("$BROWSER is a POSIX convention")
	}
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	as := fixture.NewAuthServer(t)
	is := newTestIssuer(t)
	port := freeLoopbackPort(t)
	resource := "http://127.0.0.1:" + port + "/mcp"
	callback := "http://127.0.0.1:" + port + "/oauth/callback"
	cfg := writeConfig(t, obj{"mcpServers": obj{"notes": obj{"type": "http", "url": as.Resource}}})

	// The operator signs in first: a credential of subject "" is stored.
	login := self(t, "auth", "login", "notes", "-config", cfg)
	browser := filepath.Join(t.TempDir(), "browser.sh")
	if err := os.WriteFile(browser, []byte("#!/bin/sh\n"+testBrowserEnv+"=plain exec '"+os.Args[0]+"' \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	login.Env = append(login.Env, "BROWSER="+browser)
	if out, err := login.CombinedOutput(); err != nil || !strings.Contains(string(out), "signed in") {
		t.Fatalf("auth login: %v\n%s", err, out)
	}
	operator := as.Accepted()

	_, stderr, endpoint := serveListening(t, []string{"BROWSER="}, "serve", "-config", cfg, "-listen", "127.0.0.1:"+port,
		"-oauth-issuer", is.URL, "-oauth-resource", resource, "-http", "127.0.0.1:0")
	addr := consoleAddr(t, stderr)
	token := madeToken(t, addr)

	alice := connectCaller(t, endpoint, is.Token(t, resource, "alice", "mcp"), "alice")
	text, isErr := alice.call(t, "mcp__notes__whoami", "")
	if !isErr || !strings.Contains(text, as.Issuer+"/authorize?") {
		t.Fatalf("alice's first call = %q (isError %v); want her own sign-in link", text, isErr)
	}
	var p *mcp.ElicitParams
	select {
	case p = <-alice.asked:
	case <-time.After(limit):
		t.Fatalf("serve never asked alice to sign in; stderr:\n%s", stderr)
	}
	consent(t, p.URL, "alice", callback)
	deadline := time.Now().Add(limit)
	for {
		text, isErr := alice.call(t, "mcp__notes__whoami", "")
		if !isErr {
			if text != "subject alice" {
				t.Errorf("alice reached the upstream as %q", text)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice's call after her sign-in = %q; stderr:\n%s", text, stderr)
		}
		time.Sleep(50 * time.Millisecond) // her instance reconnects with the credential
	}
	if tools := alice.tools(t); !slices.Contains(tools, "mcp__notes__whoami") {
		t.Errorf("alice lists %v; want notes' tools from her own instance", tools)
	}

	if got := as.Accepted()[len(operator):]; len(got) == 0 || slices.ContainsFunc(got, func(s string) bool { return s != "alice" }) {
		t.Errorf("while serve ran the upstream accepted %v; want alice alone, never the operator's token", got)
	}
	st := consoleServerStatus(t, addr, token, "notes")
	if st.State != "needs-authorization" || !strings.Contains(st.LastError, "each caller signs in") {
		t.Errorf("the shared instance of notes: %s, %q; want needs-authorization saying each caller signs in", st.State, st.LastError)
	}
	if strings.Contains(stderr.String(), `server "notes" needs a sign-in: open`) {
		t.Errorf("serve printed the operator's sign-in line for a per-caller server:\n%s", stderr)
	}
}

// A caller whose client only calls the tools it has listed still finds a
// per-caller server: its 2025-11-25 session's own instance of the server
// starts when the session has initialized, so the caller is asked to
// sign in (a URL elicitation, to that caller alone) before any call, and
// once signed in its client hears tools/list_changed and lists the
// server's tools. Another caller is asked with its own URL and lists
// none of them. A 2026-07-28 client of the caller, which has no session
// to be told of a change, lists them at its first tools/list. The
// upstream accepts the caller's own token only.
func TestServePerCallerSignInWithoutACall(t *testing.T) {
	as, is, resource, callback, stderr, endpoint := servePerCaller(t)

	aliceToken := is.Token(t, resource, "alice", "mcp")
	alice := connectCaller(t, endpoint, aliceToken, "alice")
	bob := connectCaller(t, endpoint, is.Token(t, resource, "bob", "mcp"), "bob")
	hasNotes := func(tools []string) bool {
		return slices.ContainsFunc(tools, func(s string) bool { return strings.HasPrefix(s, "mcp__notes__") })
	}
	if tools := alice.tools(t); hasNotes(tools) {
		t.Fatalf("alice lists %v before she signed in", tools)
	}
	asked := func(c *callerClient) *mcp.ElicitParams {
		select {
		case p := <-c.asked:
			return p
		case <-time.After(limit):
			t.Fatalf("serve never asked %s to sign in, though %s called nothing; stderr:\n%s", c.subject, c.subject, stderr)
			return nil
		}
	}
	p := asked(alice)
	if p.Mode != "url" || !strings.HasPrefix(p.URL, as.Issuer+"/authorize?") {
		t.Fatalf("alice was asked %+v; want a URL elicitation of notes' authorization server", p)
	}
	if q := asked(bob); q.URL == p.URL {
		t.Errorf("bob was asked to open alice's URL")
	}
	for len(alice.changes) > 0 {
		<-alice.changes // changes before her sign-in
	}
	bobChanges := bob.count.Load()
	consent(t, p.URL, "alice", callback)
	select {
	case id := <-alice.complete:
		if id != p.ElicitationID {
			t.Errorf("alice: sign-in complete for %q, want %q", id, p.ElicitationID)
		}
	case <-time.After(limit):
		t.Fatalf("serve never told alice her sign-in was complete; stderr:\n%s", stderr)
	}
	deadline := time.After(limit)
	for tools := alice.tools(t); !hasNotes(tools); tools = alice.tools(t) {
		select {
		case <-alice.changes:
		case <-deadline:
			t.Fatalf("alice lists %v after her sign-in; want notes' tools, announced by tools/list_changed; stderr:\n%s", tools, stderr)
		}
	}
	if text, isErr := alice.call(t, "mcp__notes__whoami", ""); isErr || text != "subject alice" {
		t.Errorf("alice's call = %q (isError %v); want her own subject", text, isErr)
	}

	modern := connectWith(t, &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: bearer{aliceToken, http.DefaultTransport}}}, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	t.Cleanup(func() { _ = modern.sess.Close() })
	if tools := modern.tools(t); !hasNotes(tools) {
		t.Errorf("alice's 2026-07-28 client lists %v at its first tools/list; want notes' tools", tools)
	}

	if tools := bob.tools(t); hasNotes(tools) {
		t.Errorf("bob lists %v: alice's sign-in reached him", tools)
	}
	if n := bob.count.Load(); n != bobChanges {
		t.Errorf("bob heard %d tools/list_changed after alice's sign-in; want none", n-bobChanges)
	}
	select {
	case q := <-bob.asked:
		t.Errorf("bob was asked again: %s", q.URL)
	default:
	}
	// bob's 2026-07-28 client: its own instance needs bob's sign-in, and
	// its tools/list is answered at once, with none of notes' tools but
	// the sign-in entry (TestServePerCallerSignInListed).
	bobModern := connectWith(t, &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: bearer{is.Token(t, resource, "bob", "mcp"), http.DefaultTransport}}}, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	t.Cleanup(func() { _ = bobModern.sess.Close() })
	start := time.Now()
	if tools := bobModern.tools(t); !slices.Equal(tools, []string{"mcp__notes__authenticate"}) {
		t.Errorf("bob's 2026-07-28 client lists %v; want the sign-in entry alone", tools)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("bob's 2026-07-28 tools/list took %v; want it answered once his instance asked for a sign-in", d)
	}
	for _, sub := range as.Accepted() {
		if sub != "alice" {
			t.Errorf("the upstream accepted a token of %q; want alice's alone", sub)
		}
	}
	noSignInSecret(t, as, "serve's stderr", stderr.String())
}

// TestServePerCallerSignInListed: a 2026-07-28 client, which serve can
// ask nothing outside a call, of a caller not signed in to notes lists a
// tool mcp__notes__authenticate while its own instance waits for the
// sign-in; calling it answers with that caller's own authorization URL
// (alice's for alice, bob's for bob). Once alice has signed in, her list
// has notes' tools and no such entry; bob's still has his.
func TestServePerCallerSignInListed(t *testing.T) {
	as, is, resource, callback, stderr, endpoint := servePerCaller(t)
	modern := func(subject string) *frontClient {
		c := connectWith(t, &mcp.StreamableClientTransport{Endpoint: endpoint,
			HTTPClient: &http.Client{Transport: bearer{is.Token(t, resource, subject, "mcp"), http.DefaultTransport}}}, nil,
			&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
		t.Cleanup(func() { _ = c.sess.Close() })
		return c
	}
	const entry = "mcp__notes__authenticate"
	authURL := regexp.MustCompile(regexp.QuoteMeta(as.Issuer+"/authorize?") + `[^\s"'()]+`)
	signIn := func(c *frontClient, subject string) string {
		t.Helper()
		tools := c.tools(t)
		if !slices.Contains(tools, entry) {
			t.Fatalf("%s's 2026-07-28 client lists %v before signing in; want %s; stderr:\n%s", subject, tools, entry, stderr)
		}
		if slices.ContainsFunc(tools, func(s string) bool { return strings.HasPrefix(s, "mcp__notes__") && s != entry }) {
			t.Fatalf("%s lists %v before signing in", subject, tools)
		}
		text, isErr := c.call(t, entry, "")
		u := authURL.FindString(text)
		if !isErr || u == "" {
			t.Fatalf("%s's call of %s = %q (isError %v); want its authorization URL", subject, entry, text, isErr)
		}
		return u
	}
	alice, bob := modern("alice"), modern("bob")
	aliceURL := signIn(alice, "alice")
	bobURL := signIn(bob, "bob")
	if aliceURL == bobURL {
		t.Fatalf("alice and bob were given one authorization URL")
	}
	consent(t, aliceURL, "alice", callback)
	stderr.waitFor(t, 0, "connected and registered tools", "sub:alice")
	// The log line comes with the transition; alice's list follows it,
	// announced by a tools/list_changed.
	for tools := alice.tools(t); !slices.Contains(tools, "mcp__notes__whoami") || slices.Contains(tools, entry); tools = alice.tools(t) {
		select {
		case <-alice.changes:
		case <-time.After(limit):
			t.Fatalf("alice lists %v after her sign-in and heard of no change; want notes' tools and no %s; stderr:\n%s", tools, entry, stderr)
		}
	}
	if text, isErr := alice.call(t, "mcp__notes__whoami", ""); isErr || text != "subject alice" {
		t.Errorf("alice's call = %q (isError %v); want her own subject", text, isErr)
	}
	if got := signIn(bob, "bob"); got == aliceURL {
		t.Errorf("bob was given alice's URL")
	}
	for _, sub := range as.Accepted() {
		if sub != "alice" {
			t.Errorf("the upstream accepted a token of %q; want alice's alone", sub)
		}
	}
}
