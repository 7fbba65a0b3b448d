package signin_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/mcpfsm/mcpfsm/signin"
)

// Flows runs one sign-in per server and subject: a second Start while
// one runs returns it; the flow shows its URL, refuses a forged state
// and goes on waiting, and stores the credential when the redirect
// arrives.
func TestFlowsOnePerServerAndForgedStateRefused(t *testing.T) {
	as := fixture.NewAuthServer(t)
	store := signin.NewFileStore(filepath.Join(t.TempDir(), "credentials"))
	shown := make(chan *signin.Flow, 4)
	fs := signin.NewFlows(signin.FlowsConfig{Clock: clock.NewMock(),
		Show: func(_ context.Context, f *signin.Flow) { shown <- f }})
	defer fs.Close()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	lc := signin.LoginConfig{Server: "notes", Resource: as.Resource, Store: store, HTTPClient: &http.Client{Transport: tr}}
	f, started := fs.Start(lc)
	if !started {
		t.Fatal("the first Start did not start a sign-in")
	}
	if again, started := fs.Start(lc); started || again != f {
		t.Errorf("a second Start while one runs started another (%v)", started)
	}
	var got *signin.Flow
	select {
	case got = <-shown:
	case <-f.Done():
		t.Fatalf("the sign-in ended before showing its URL: %v", f.Err())
	}
	if got != f || !strings.HasPrefix(f.URL(), as.Issuer+"/authorize?") {
		t.Fatalf("shown %v with URL %q", got, f.URL())
	}
	b := newBrowser(t, true)
	if err := b.open(context.Background(), f.URL()); err != nil {
		t.Fatal(err)
	}
	<-f.Done()
	if f.Err() != nil {
		t.Fatalf("sign-in: %v", f.Err())
	}
	if len(b.refusals) != 1 || b.refusals[0] != http.StatusBadRequest {
		t.Errorf("the forged redirect got %v, want one 400", b.refusals)
	}
	if c, err := store.Find(context.Background(), "", as.Resource); err != nil || c == nil {
		t.Fatalf("no credential stored: %v", err)
	}
	if fs.Pending("notes", "") != nil {
		t.Error("the ended sign-in is still pending")
	}
}

// A sign-in nobody completes ends when its time is up (on the flows'
// clock), and Cancel ends one at once; neither stores anything.
func TestFlowsBoundedAndCanceled(t *testing.T) {
	as := fixture.NewAuthServer(t)
	store := signin.NewFileStore(filepath.Join(t.TempDir(), "credentials"))
	clk := clock.NewMock()
	shown := make(chan *signin.Flow, 4)
	fs := signin.NewFlows(signin.FlowsConfig{Clock: clk, Timeout: signin.DefaultFlowTimeout,
		Show: func(_ context.Context, f *signin.Flow) { shown <- f }})
	defer fs.Close()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	f, _ := fs.Start(signin.LoginConfig{Server: "a", Resource: as.Resource, Store: store, HTTPClient: &http.Client{Transport: tr}})
	<-shown
	clk.Add(signin.DefaultFlowTimeout - 1)
	select {
	case <-f.Done():
		t.Fatalf("the sign-in ended before its time: %v", f.Err())
	default:
	}
	clk.Add(1)
	<-f.Done()
	if err := f.Err(); err == nil || !strings.Contains(err.Error(), "no sign-in within 10m0s") {
		t.Errorf("timed-out sign-in: %v", err)
	}
	// The timed-out flow's redirect is no longer accepted.
	b := newBrowser(t, false)
	if err := b.open(context.Background(), f.URL()); err == nil {
		t.Error("the redirect of a timed-out sign-in was accepted")
	}

	g, _ := fs.Start(signin.LoginConfig{Server: "b", Resource: as.Resource, Store: store, HTTPClient: &http.Client{Transport: tr}})
	<-shown
	fs.Cancel("b", "")
	<-g.Done()
	if !errors.Is(g.Err(), signin.ErrFlowCanceled) {
		t.Errorf("canceled sign-in: %v", g.Err())
	}
	if c, _ := store.Find(context.Background(), "", as.Resource); c != nil {
		t.Error("a credential was stored")
	}
}

// Redirects hands a redirect only to the sign-in whose state it carries,
// once; an unknown, reused or expired state gets 400.
func TestRedirectsSingleUseAndExpiring(t *testing.T) {
	clk := clock.NewMock()
	r := signin.NewRedirects(clk)
	srv := httptest.NewServer(r)
	defer srv.Close()
	get := func(q string) int {
		resp, err := http.Get(srv.URL + "/callback?" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	ch, done := signin.ExpectForTest(r, "s1", "alice", 0)
	defer done()
	if code := get("state=s2&code=x"); code != http.StatusBadRequest {
		t.Errorf("unknown state: %d, want 400", code)
	}
	if code := get("state=s1&code=x"); code != http.StatusOK {
		t.Errorf("right state: %d, want 200", code)
	}
	if code := get("state=s1&code=y"); code != http.StatusBadRequest {
		t.Errorf("reused state: %d, want 400", code)
	}
	if res := <-ch; res != "x" {
		t.Errorf("sign-in got code %q, want the first redirect's", res)
	}
	ch2, done2 := signin.ExpectForTest(r, "s3", "bob", signin.DefaultFlowTimeout)
	defer done2()
	clk.Add(signin.DefaultFlowTimeout)
	if _, ok := <-ch2; ok {
		t.Error("an expired sign-in got a redirect")
	}
	if code := get("state=s3&code=z"); code != http.StatusBadRequest {
		t.Errorf("expired state: %d, want 400", code)
	}
	if r.Pending() != 0 {
		t.Errorf("%d sign-ins still pending", r.Pending())
	}
}

// A 403 insufficient_scope makes the next sign-in ask for the scopes the
// credential had and those the server challenged with (step-up).
func TestStepUpScopes(t *testing.T) {
	store := signin.NewFileStore(filepath.Join(t.TempDir(), "credentials"))
	ctx := context.Background()
	c := &signin.Credential{Key: signin.Key{Resource: "https://mcp.example.com/mcp", Issuer: "https://as.example.com", Client: "c"},
		AccessToken: "at-1", TokenURL: "https://as.example.com/token", Scopes: []string{"read"}}
	if err := store.Save(ctx, c); err != nil {
		t.Fatal(err)
	}
	h := signin.NewHandler(signin.HandlerConfig{Server: "s", Resource: c.Resource, Store: store, Clock: clock.NewMock()})
	if _, err := h.TokenSource(ctx); err != nil {
		t.Fatal(err)
	}
	if got := h.StepUpScopes(); got != nil {
		t.Errorf("StepUpScopes before any 403 = %v, want nil", got)
	}
	req := httptest.NewRequest(http.MethodPost, c.Resource, nil)
	req.Header.Set("Authorization", "Bearer at-1")
	resp := &http.Response{StatusCode: http.StatusForbidden, Body: http.NoBody, Header: http.Header{
		"Www-Authenticate": {`Bearer error="insufficient_scope", scope="write read"`}}}
	if err := h.Authorize(ctx, req, resp); err == nil {
		t.Fatal("Authorize of a 403 insufficient_scope: no sign-in asked for")
	}
	if got, want := h.StepUpScopes(), []string{"read", "write"}; !slices.Equal(got, want) {
		t.Errorf("StepUpScopes = %v, want %v", got, want)
	}
}
