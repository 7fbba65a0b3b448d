package signin_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/mcpfsm/mcpfsm/signin"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const waitLimit = 10 * time.Second

// browser plays the person's browser: it opens the authorization URL,
// which the fixture's authorization server answers with a redirect at
// once. With tamper, it first delivers the redirect with another state,
// which the listener must refuse.
type browser struct {
	tamper   bool
	refusals []int // the listener's answers to the tampered redirects
	client   *http.Client
}

func newBrowser(t *testing.T, tamper bool) *browser {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &browser{tamper: tamper, client: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) open(ctx context.Context, authURL string) error {
	resp, err := b.get(ctx, authURL)
	if err != nil {
		return err
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound {
		return fmt.Errorf("authorization endpoint answered %s", resp.Status)
	}
	if b.tamper {
		bad := *loc
		q := bad.Query()
		q.Set("state", "forged-"+q.Get("state"))
		bad.RawQuery = q.Encode()
		r, err := b.get(ctx, bad.String())
		if err != nil {
			return err
		}
		b.refusals = append(b.refusals, r.StatusCode)
	}
	r, err := b.get(ctx, loc.String())
	if err != nil {
		return err
	}
	if r.StatusCode != http.StatusOK {
		return fmt.Errorf("callback answered %s", r.Status)
	}
	return nil
}

func (b *browser) get(ctx context.Context, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, nil
}

func login(t *testing.T, as *fixture.AuthServer, store signin.Store, b *browser) *signin.Credential {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	c, err := signin.Login(ctx, signin.LoginConfig{Server: "notes", Resource: as.Resource, Store: store,
		Open: b.open, HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	return c
}

// A sign-in stores the credential in a 0600 file of a 0700 directory,
// bound to the issuer, resource and client; a redirect with a forged
// state is refused and the sign-in goes on.
func TestLoginStoresCredential(t *testing.T) {
	as := fixture.NewAuthServer(t)
	dir := filepath.Join(t.TempDir(), "credentials")
	store := signin.NewFileStore(dir)
	b := newBrowser(t, true)
	c := login(t, as, store, b)
	if len(b.refusals) != 1 || b.refusals[0] != http.StatusBadRequest {
		t.Errorf("the forged redirect got %v, want one 400", b.refusals)
	}
	if c.Issuer != as.Issuer || c.Resource != as.Resource || c.Client == "" || c.RefreshToken == "" {
		t.Errorf("credential key %+v, want issuer %s, resource %s, a client and a refresh token", c.Key, as.Issuer, as.Resource)
	}
	if runtime.GOOS != "windows" {
		assertMode(t, dir, 0o700)
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		if len(files) != 1 {
			t.Fatalf("credential files %v, want one", files)
		}
		assertMode(t, files[0], 0o600)
	}
	// Read back as a restarted process would.
	got, err := signin.NewFileStore(dir).Find(context.Background(), "", as.Resource)
	if err != nil || got == nil || got.AccessToken != c.AccessToken {
		t.Fatalf("Find after a restart: %v, %v", got, err)
	}
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s has mode %04o, want %04o", path, got, want)
	}
}

// A file others may read, or one that is not a credential, is an error
// naming the file and the fix, never a crash.
func TestFileStoreRefusesUnsafeAndCorruptFiles(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix modes on Windows")
	}
	dir := t.TempDir()
	store := signin.NewFileStore(filepath.Join(dir, "c"))
	ctx := context.Background()
	if err := store.Save(ctx, &signin.Credential{Key: signin.Key{Resource: "https://r/mcp", Issuer: "https://i", Client: "c"}, AccessToken: "at-1", TokenURL: "https://i/token"}); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "c", "*.json"))
	if err := os.Chmod(files[0], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := store.Find(ctx, "", "https://r/mcp")
	if !errors.Is(err, signin.ErrUnsafe) || !strings.Contains(err.Error(), files[0]) || !strings.Contains(err.Error(), "chmod 600 "+files[0]) {
		t.Errorf("Find on a 0644 file: %v; want ErrUnsafe naming the file and chmod 600", err)
	}
	if err := os.WriteFile(files[0], []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(files[0], 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = store.Find(ctx, "", "https://r/mcp")
	if !errors.Is(err, signin.ErrCorrupt) || !strings.Contains(err.Error(), files[0]) || !strings.Contains(err.Error(), "mcpfsm auth login") {
		t.Errorf("Find on a corrupt file: %v; want ErrCorrupt naming the file and the sign-in", err)
	}
}

// supervised starts a supervisor of the fixture's resource server whose
// OAuth handler reads store.
type supervised struct {
	sup   *conn.Supervisor
	reg   *conn.ToolRegistry
	rec   *conntest.Recorder
	clk   *clock.Mock
	asked chan string
}

func supervise(t *testing.T, as *fixture.AuthServer, store signin.Store) *supervised {
	t.Helper()
	s := &supervised{reg: conn.NewRegistry(), rec: conntest.NewRecorder(), clk: clock.NewMock(), asked: make(chan string, 10)}
	s.clk.Set(time.Now()) // the tokens' expiry is on the authorization server's clock
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	h := signin.NewHandler(signin.HandlerConfig{Server: "notes", Resource: as.Resource, Store: store, Clock: s.clk,
		How: "run: mcpfsm auth login notes -config mcp.json", Client: &http.Client{Transport: tr},
		OnSignInNeeded: func(how string) { s.asked <- how }})
	ht := conn.Streamable(as.Resource)
	ht.Client = &http.Client{Transport: tr}
	ht.OAuthHandler = h
	// Pings far beyond the clock jumps the tests make (a token's hour).
	sup, err := conn.Start(context.Background(), conn.Config{Name: "notes", Transport: ht, Registry: s.reg, Clock: s.clk, KeepAlive: 1000 * time.Hour,
		Logger: s.rec.Logger(), OnTransition: s.rec.OnTransition})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sup.Close(context.Background()) })
	s.sup = sup
	return s
}

func (s *supervised) whoami(t *testing.T) (string, error) {
	t.Helper()
	tool, ok := s.reg.Lookup("mcp__notes__whoami")
	if !ok {
		return "", errors.New("no tool mcp__notes__whoami")
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	res, err := tool.Call(ctx, map[string]any{})
	if err != nil {
		return "", err
	}
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	if res.IsError {
		return "", fmt.Errorf("tool error: %s", strings.Join(text, " "))
	}
	return strings.Join(text, " "), nil
}

// A server that needs a sign-in waits in needs-authorization: no budget
// spent, no timer, whatever the clock does; the sign-in brings it up with
// no Reconnect. An expired token is refreshed (the rotated refresh token
// replaces the old one); a revoked one leads back to needs-authorization.
// No token, code or verifier reaches a log line, the status or an error.
func TestNeedsAuthorizationUntilSignIn(t *testing.T) {
	as := fixture.NewAuthServer(t)
	store := signin.NewFileStore(filepath.Join(t.TempDir(), "credentials"))
	s := supervise(t, as, store)

	trs := s.rec.Expect(t, waitLimit, conn.NeedsAuthorization)
	st := s.sup.Status()
	if st.State != conn.NeedsAuthorization || st.Attempt != 0 || !st.NextRetry.IsZero() {
		t.Errorf("status %+v: want needs-authorization, attempt 0, no retry scheduled", st)
	}
	if !errors.Is(trs[0].Err, conn.ErrNeedsAuthorization) || !strings.Contains(trs[0].Err.Error(), "mcpfsm auth login notes -config mcp.json") {
		t.Errorf("transition error %v: want ErrNeedsAuthorization saying how to sign in", trs[0].Err)
	}
	if how := conntest.Receive(t, s.asked, waitLimit, "the sign-in notice"); !strings.Contains(how, "mcpfsm auth login notes") {
		t.Errorf("sign-in notice %q", how)
	}
	refused := as.Refused()
	// Half an hour: far past any backoff and poll, within the tokens' hour.
	s.clk.Add(30 * time.Minute)
	s.rec.NoTransition(t)
	if as.Refused() != refused {
		t.Errorf("%d more requests while waiting for the sign-in, want none", as.Refused()-refused)
	}

	c := login(t, as, store, newBrowser(t, false))
	s.rec.Expect(t, waitLimit, conn.Connecting, conn.Established)
	if got, err := s.whoami(t); err != nil || !strings.Contains(got, "user-"+c.Client) {
		t.Fatalf("whoami = %q, %v; want the signed-in subject", got, err)
	}
	// The 401 on the server/discover probe is no server dying on it: the
	// supervisor keeps the 2026-07-28 protocol.
	if p := s.sup.Status().Protocol; p != conn.DefaultProtocolVersion {
		t.Errorf("protocol after the sign-in %q, want %q", p, conn.DefaultProtocolVersion)
	}

	// The access token expires at the server: one refresh, and the call
	// goes through; the rotated refresh token replaces the old one.
	as.ExpireAccess()
	if got, err := s.whoami(t); err != nil || !strings.Contains(got, "user-"+c.Client) {
		t.Fatalf("whoami after expiry = %q, %v", got, err)
	}
	if as.Refreshes() != 1 {
		t.Errorf("%d refreshes, want 1", as.Refreshes())
	}
	now, err := store.Find(context.Background(), "", as.Resource)
	if err != nil || now == nil || now.RefreshToken == c.RefreshToken || now.AccessToken == c.AccessToken {
		t.Errorf("stored credential after the refresh: %v; want the rotated tokens", err)
	}

	// Everything revoked: the refresh fails and the server needs a
	// sign-in again; the call is answered at once with how.
	as.RevokeAll()
	_, err = s.whoami(t)
	s.rec.Expect(t, waitLimit, conn.NeedsAuthorization)
	if got, err := s.whoami(t); err == nil || !strings.Contains(err.Error(), "needs-authorization") {
		t.Errorf("call in needs-authorization = %q, %v; want it refused at once naming the state", got, err)
	}

	var all []string
	for _, l := range s.rec.Logs(slog.LevelDebug) {
		all = append(all, l.Msg)
	}
	for _, r := range s.rec.Records(slog.LevelDebug) {
		for _, v := range r.Attrs {
			all = append(all, v)
		}
	}
	all = append(all, fmt.Sprintf("%+v", s.sup.Status()))
	if err != nil {
		all = append(all, err.Error())
	}
	for _, tr := range s.rec.Seen() {
		if tr.Err != nil {
			all = append(all, tr.Err.Error())
		}
	}
	text := strings.Join(all, "\n")
	for _, secret := range as.Secrets() {
		if secret != "" && strings.Contains(text, secret) {
			t.Errorf("a secret the authorization server issued appears in logs, status or errors")
		}
	}
}

// Two goroutines meeting an expired token refresh it once: the second
// waits for the first and takes its result.
func TestOneRefreshInFlight(t *testing.T) {
	as := fixture.NewAuthServer(t)
	store := signin.NewFileStore(filepath.Join(t.TempDir(), "credentials"))
	s := supervise(t, as, store)
	s.rec.Expect(t, waitLimit, conn.NeedsAuthorization)
	login(t, as, store, newBrowser(t, false))
	s.rec.Expect(t, waitLimit, conn.Connecting, conn.Established)
	as.ExpireAccess()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.whoami(t)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("call: %v", err)
		}
	}
	if n := as.Refreshes(); n != 1 {
		t.Errorf("%d refreshes for 4 calls meeting one expired token, want 1", n)
	}
}

// A token past its expiry (on the handler's clock) is refreshed before it
// is sent: the server never sees it refused.
func TestExpiredTokenRefreshedBeforeUse(t *testing.T) {
	as := fixture.NewAuthServer(t)
	store := signin.NewFileStore(filepath.Join(t.TempDir(), "credentials"))
	s := supervise(t, as, store)
	s.rec.Expect(t, waitLimit, conn.NeedsAuthorization)
	c := login(t, as, store, newBrowser(t, false))
	s.rec.Expect(t, waitLimit, conn.Connecting, conn.Established)
	refused := as.Refused()
	s.clk.Add(c.Expiry.Sub(s.clk.Now()) + time.Minute)
	if got, err := s.whoami(t); err != nil || !strings.Contains(got, "user-"+c.Client) {
		t.Fatalf("whoami after the expiry = %q, %v", got, err)
	}
	if n := as.Refreshes(); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
	if as.Refused() != refused {
		t.Errorf("the server refused %d requests; an expired token should be refreshed before it is sent", as.Refused()-refused)
	}
}

// Claude Code's keys: a pre-registered client (oauth.clientId) on a fixed
// callback port (oauth.callbackPort), with the authorization server's
// metadata URL given (oauth.authServerMetadataUrl). A callback port in
// use is an error naming the key and the fix.
func TestLoginWithPreregisteredClient(t *testing.T) {
	as := fixture.NewAuthServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	id := as.Register(fmt.Sprintf("http://localhost:%d/callback", port))
	client := signin.Client{ClientID: id, CallbackPort: port, AuthServerMetadataURL: as.Issuer + "/.well-known/oauth-authorization-server", Scopes: []string{"mcp"}}
	store := signin.NewFileStore(filepath.Join(t.TempDir(), "credentials"))
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	b := newBrowser(t, false)
	cfg := signin.LoginConfig{Server: "notes", Resource: as.Resource, Store: store, Client: client, Open: b.open}

	// The port is taken (by ln): the error names the key and the fix.
	_, err = signin.Login(ctx, cfg)
	if !errors.Is(err, signin.ErrCallbackPort) || !strings.Contains(err.Error(), fmt.Sprintf("oauth.callbackPort %d", port)) {
		t.Errorf("Login on a taken port: %v; want ErrCallbackPort naming oauth.callbackPort", err)
	}
	ln.Close()

	c, err := signin.Login(ctx, cfg)
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	// offline_access is added where the server supports it, for a refresh token.
	if c.Client != id || c.Issuer != as.Issuer || strings.Join(slices.Sorted(slices.Values(c.Scopes)), " ") != "mcp offline_access" {
		t.Errorf("credential client %q issuer %q scopes %q; want %q, %q, [offline_access mcp]", c.Client, c.Issuer, c.Scopes, id, as.Issuer)
	}
}
