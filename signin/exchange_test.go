package signin_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/mcpfsm/mcpfsm/signin"
)

func newExchanger(t *testing.T, as *fixture.AuthServer, store signin.Store, clk clock.Clock) *signin.Exchanger {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	e, err := signin.NewExchanger(signin.ExchangeConfig{Server: "notes", Resource: as.Resource, TokenURL: as.Issuer + "/token",
		Issuer: as.Issuer, ClientID: "gateway", Scopes: []string{"mcp"}, Store: store, Client: &http.Client{Transport: tr}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// superviseAs starts a supervisor of the fixture's resource server whose
// requests carry the token exchanged for one caller.
func superviseAs(t *testing.T, as *fixture.AuthServer, e *signin.Exchanger, subject, callerToken string, clk clock.Clock) *supervised {
	t.Helper()
	s := &supervised{reg: conn.NewRegistry(), rec: conntest.NewRecorder()}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	ht := conn.Streamable(as.Resource)
	ht.Client = &http.Client{Transport: tr}
	ht.OAuthHandler = e.ForCaller(subject, func(context.Context) (string, error) { return callerToken, nil })
	sup, err := conn.Start(context.Background(), conn.Config{Name: "notes", Transport: ht, Registry: s.reg, Clock: clk, KeepAlive: 1000 * time.Hour,
		Logger: s.rec.Logger(), OnTransition: s.rec.OnTransition})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sup.Close(context.Background()) })
	s.sup = sup
	return s
}

// Two callers of a gateway each reach the upstream as themselves through
// RFC 8693 token exchange of their own tokens: one exchange each, kept in
// the store under the caller's subject; an expired exchanged token is
// refreshed, a revoked one exchanged anew; a caller whose token the
// upstream's authorization server does not trust gets an error naming
// the fix, never another caller's token, and no token in any error.
func TestTokenExchangePerCaller(t *testing.T) {
	as := fixture.NewAuthServer(t)
	as.TrustSubjectToken("idp-token-alice", "alice")
	as.TrustSubjectToken("idp-token-bob", "bob")
	store := signin.NewFileStore(filepath.Join(t.TempDir(), "credentials"))
	clk := clock.NewMock()
	clk.Set(time.Now())
	e := newExchanger(t, as, store, clk)

	alice := superviseAs(t, as, e, "alice", "idp-token-alice", clk)
	bob := superviseAs(t, as, e, "bob", "idp-token-bob", clk)
	alice.rec.Expect(t, waitLimit, conn.Established)
	bob.rec.Expect(t, waitLimit, conn.Established)
	for _, c := range []struct {
		s    *supervised
		want string
	}{{alice, "subject alice"}, {bob, "subject bob"}, {alice, "subject alice"}} {
		if got, err := c.s.whoami(t); err != nil || got != c.want {
			t.Errorf("whoami = %q, %v; want %q", got, err, c.want)
		}
	}
	if n := as.Exchanges(); n != 2 {
		t.Errorf("%d exchanges for two callers, want 2", n)
	}
	ctx := context.Background()
	for _, sub := range []string{"alice", "bob"} {
		if c, err := store.Find(ctx, sub, as.Resource); err != nil || c == nil || c.Subject != sub {
			t.Errorf("stored credential of %s: %v, %v", sub, c != nil, err)
		}
	}

	// Expired at the upstream: the token is refreshed, not exchanged.
	as.ExpireAccess()
	if got, err := alice.whoami(t); err != nil || got != "subject alice" {
		t.Errorf("whoami after expiry = %q, %v", got, err)
	}
	if as.Refreshes() != 1 || as.Exchanges() != 2 {
		t.Errorf("after expiry: %d refreshes, %d exchanges; want 1, 2", as.Refreshes(), as.Exchanges())
	}
	// Everything revoked: the refresh fails and the caller's token is
	// exchanged anew.
	as.RevokeAll()
	if got, err := bob.whoami(t); err != nil || got != "subject bob" {
		t.Errorf("whoami after revocation = %q, %v", got, err)
	}
	if n := as.Exchanges(); n != 3 {
		t.Errorf("%d exchanges after revocation, want 3", n)
	}
	// Past the tokens' hour on the gateway's clock: exchanged tokens are
	// renewed before they are sent.
	clk.Add(2 * time.Hour)
	refused := as.Refused()
	if got, err := alice.whoami(t); err != nil || got != "subject alice" {
		t.Errorf("whoami after the hour = %q, %v", got, err)
	}
	if as.Refused() != refused {
		t.Errorf("an expired exchanged token was sent")
	}

	// A caller the authorization server does not trust.
	_, err := e.Token(ctx, "mallory", func(context.Context) (string, error) { return "idp-token-mallory", nil }, "")
	if err == nil || !strings.Contains(err.Error(), "invalid_grant") || !strings.Contains(err.Error(), "trusts the callers' identity provider") {
		t.Errorf("exchange of an untrusted token: %v; want invalid_grant and the fix", err)
	}
	if c, _ := store.Find(ctx, "mallory", as.Resource); c != nil {
		t.Error("a credential was stored for a caller whose exchange was refused")
	}
	if _, err := e.Token(ctx, "", func(context.Context) (string, error) { return "x", nil }, ""); err == nil || !strings.Contains(err.Error(), "-oauth-issuer") {
		t.Errorf("exchange without a subject: %v", err)
	}
	for _, secret := range append(as.Secrets(), "idp-token-mallory") {
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("the refused exchange's error holds a token")
		}
	}
	if _, err := signin.NewExchanger(signin.ExchangeConfig{Server: "notes", Resource: as.Resource, Store: store, ClientID: "gateway"}); err == nil || !strings.Contains(err.Error(), "tokenUrl") {
		t.Errorf("NewExchanger without a token URL: %v", err)
	}
}

// Many requests of one caller meeting no token make one exchange.
func TestTokenExchangeOneInFlight(t *testing.T) {
	as := fixture.NewAuthServer(t)
	as.TrustSubjectToken("idp-token-alice", "alice")
	r := newReplicas(t)
	a, b := r.open(t, r.key, 0), r.open(t, r.key, 0)
	ea, eb := newExchanger(t, as, a, clock.New()), newExchanger(t, as, b, clock.New())
	var wg sync.WaitGroup
	toks := make(chan string, 8)
	for i := range 8 {
		e := ea
		if i%2 == 1 {
			e = eb
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok, err := e.Token(context.Background(), "alice", func(context.Context) (string, error) { return "idp-token-alice", nil }, "")
			if err != nil {
				t.Error(err)
				return
			}
			toks <- tok.AccessToken
		}()
	}
	wg.Wait()
	close(toks)
	seen := map[string]bool{}
	for tok := range toks {
		seen[tok] = true
	}
	if n := as.Exchanges(); n != 1 || len(seen) != 1 {
		t.Errorf("%d exchanges and %d distinct tokens for 8 requests of one caller on two replicas; want 1 and 1", n, len(seen))
	}
}

// A caller whose token the upstream's authorization server refuses to
// exchange is a sign-in state, not an outage: the caller's supervisor
// waits in needs-authorization (attempt 0, no retry scheduled, no
// further exchange while the clock runs), its error says why the
// exchange was refused and the fix, and no token is in it. When the
// caller comes with a token the authorization server trusts, the
// supervisor comes up by itself.
func TestTokenExchangeRefusedNeedsAuthorization(t *testing.T) {
	as := fixture.NewAuthServer(t)
	store := signin.NewFileStore(filepath.Join(t.TempDir(), "credentials"))
	clk := clock.NewMock()
	clk.Set(time.Now())
	e := newExchanger(t, as, store, clk)

	var mu sync.Mutex
	callerToken := "idp-token-mallory"
	s := &supervised{reg: conn.NewRegistry(), rec: conntest.NewRecorder()}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	ht := conn.Streamable(as.Resource)
	ht.Client = &http.Client{Transport: tr}
	ht.OAuthHandler = e.ForCaller("mallory", func(context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		return callerToken, nil
	})
	sup, err := conn.Start(context.Background(), conn.Config{Name: "notes", Transport: ht, Registry: s.reg, Clock: clk, KeepAlive: 1000 * time.Hour,
		Logger: s.rec.Logger(), OnTransition: s.rec.OnTransition})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sup.Close(context.Background()) })
	s.sup = sup

	trs := s.rec.Expect(t, waitLimit, conn.NeedsAuthorization)
	st := sup.Status()
	if st.Attempt != 0 || !st.NextRetry.IsZero() {
		t.Errorf("status %+v: want attempt 0 and no retry scheduled", st)
	}
	msg := trs[0].Err.Error()
	if !errors.Is(trs[0].Err, conn.ErrNeedsAuthorization) || !strings.Contains(msg, "invalid_grant") || !strings.Contains(msg, "trusts the callers' identity provider") {
		t.Errorf("transition error %q: want ErrNeedsAuthorization naming the refusal and the fix", msg)
	}
	for _, secret := range append(as.Secrets(), "idp-token-mallory") {
		if strings.Contains(msg, secret) {
			t.Errorf("the refused exchange's error holds a token")
		}
	}
	if err := e.Refused("mallory"); err == nil || !strings.Contains(err.Error(), "invalid_grant") {
		t.Errorf("Refused(mallory) = %v; want the refusal", err)
	}
	exchanges := as.Exchanges()
	clk.Add(30 * time.Minute) // far past any backoff
	s.rec.NoTransition(t)
	if n := as.Exchanges(); n != exchanges {
		t.Errorf("%d more exchanges while waiting, want none", n-exchanges)
	}

	// The caller comes back with a token the authorization server trusts.
	as.TrustSubjectToken("idp-token-mallory-2", "mallory")
	mu.Lock()
	callerToken = "idp-token-mallory-2"
	mu.Unlock()
	clk.Add(10 * time.Second)
	s.rec.Expect(t, waitLimit, conn.Connecting, conn.Established)
	if got, err := s.whoami(t); err != nil || got != "subject mallory" {
		t.Errorf("whoami = %q, %v; want mallory", got, err)
	}
	if err := e.Refused("mallory"); err != nil {
		t.Errorf("Refused(mallory) after a good exchange = %v", err)
	}
}
