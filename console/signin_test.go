package console

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpfsm/mcpfsm/conn"
)

// signInServer is a server whose state the test sets, and which starts
// a sign-in (SignInStarter) that gives url, or fails with err.
type signInServer struct {
	name string
	url  string
	err  error

	mu      sync.Mutex
	state   conn.State
	started int
}

func (s *signInServer) Status() conn.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return conn.Status{Server: s.name, State: s.state, Tools: []string{}}
}

func (s *signInServer) Reconnect(context.Context) error { return nil }

func (s *signInServer) SignIn(context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started++
	return s.url, s.err
}

// signInHost is a Host of fixed servers.
type signInHost []Server

func (h signInHost) Servers() []Server          { return h }
func (signInHost) Reload(context.Context) error { return ErrReloadUnsupported }

// A server that needs a sign-in says so in the status (signIn), and the
// operator starts its sign-in with POST /api/servers/NAME/signin, which
// answers the authorization URL; the console refuses it from another
// origin, for a server that needs none, for a host that cannot, and
// more than once a ReconnectInterval.
func TestSignInFromTheConsole(t *testing.T) {
	const authURL = "https://as.example/authorize?client_id=c&state=s1"
	notes := &signInServer{name: "notes", url: authURL, state: conn.NeedsAuthorization}
	up := &signInServer{name: "up", url: authURL, state: conn.Established}
	broken := &signInServer{name: "broken", err: errors.New("discovery failed"), state: conn.NeedsAuthorization}
	cons := New(signInHost{notes, up, broken, plainServer{"plain"}}, Options{})
	t.Cleanup(cons.Close)

	var st StatusReport
	do(t, cons, "GET", "/api/status", nil, &st)
	offered := map[string]bool{}
	for _, s := range st.Servers {
		offered[s.Name] = s.SignIn
	}
	if !offered["notes"] || offered["up"] || offered["plain"] {
		t.Errorf("signIn offered %v; want notes alone of notes, up and plain", offered)
	}

	// Another origin cannot start it (CSRF), nor can a foreign Host.
	if resp := do(t, cons, "POST", "/api/servers/notes/signin", http.Header{"Origin": {"http://evil.example"}}, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin sign-in: %d, want 403", resp.StatusCode)
	}
	if resp := do(t, cons, "POST", "/api/servers/notes/signin", http.Header{"Host": {"evil.example"}}, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("sign-in for Host evil.example: %d, want 403", resp.StatusCode)
	}
	if resp := do(t, cons, "GET", "/api/servers/notes/signin", nil, nil); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET sign-in: %d, want 405", resp.StatusCode)
	}
	if notes.started != 0 {
		t.Fatalf("a refused request started %d sign-ins", notes.started)
	}

	var got SignInResult
	resp := do(t, cons, "POST", "/api/servers/notes/signin", http.Header{"Origin": {"http://127.0.0.1:7777"}}, &got)
	if resp.StatusCode != http.StatusOK || got.URL != authURL || got.Name != "notes" || got.Server.State != "needs-authorization" {
		t.Fatalf("sign-in: %d %+v; want 200 with the authorization URL", resp.StatusCode, got)
	}
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("the answer with the URL is cacheable: %q", resp.Header.Get("Cache-Control"))
	}
	if resp := do(t, cons, "POST", "/api/servers/notes/signin", nil, nil); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a second sign-in at once: %d, want 429", resp.StatusCode)
	}

	var e apiError
	if resp := do(t, cons, "POST", "/api/servers/up/signin", nil, &e); resp.StatusCode != http.StatusConflict || !contains(e.Error, "established") {
		t.Errorf("sign-in of a connected server: %d %q; want 409 naming its state", resp.StatusCode, e.Error)
	}
	if resp := do(t, cons, "POST", "/api/servers/plain/signin", nil, &e); resp.StatusCode != http.StatusNotImplemented {
		t.Errorf("sign-in of a server that cannot: %d %q; want 501", resp.StatusCode, e.Error)
	}
	if resp := do(t, cons, "POST", "/api/servers/broken/signin", nil, &e); resp.StatusCode != http.StatusBadGateway || !contains(e.Error, "discovery failed") {
		t.Errorf("a failed sign-in: %d %q; want 502 saying why", resp.StatusCode, e.Error)
	}
	if resp := do(t, cons, "POST", "/api/servers/nobody/signin", nil, &e); resp.StatusCode != http.StatusNotFound {
		t.Errorf("sign-in of an unknown server: %d, want 404", resp.StatusCode)
	}
	if up.started != 0 || notes.started != 1 {
		t.Errorf("sign-ins started: up %d, notes %d; want 0 and 1", up.started, notes.started)
	}
}

// plainServer needs a sign-in but cannot start one.
type plainServer struct{ name string }

func (s plainServer) Status() conn.Status {
	return conn.Status{Server: s.name, State: conn.NeedsAuthorization, Tools: []string{}}
}
func (plainServer) Reconnect(context.Context) error { return nil }

// The page shows a Sign in button for a server that needs a sign-in (and
// none for a connected one); clicking it shows the authorization URL as
// a link to open.
func TestBrowserSignIn(t *testing.T) {
	bin := chromium(t)
	if testing.Short() {
		t.Skip("the browser test is slow; skipped with -short")
	}
	const authURL = "https://as.example/authorize?client_id=c&state=s1"
	notes := &signInServer{name: "notes", url: authURL, state: conn.NeedsAuthorization}
	up := &signInServer{name: "up", url: authURL, state: conn.Established}
	cons := New(signInHost{notes, up}, Options{})
	ln, err := Listen("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	serveCtx, stopServe := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- cons.Serve(serveCtx, ln) }()
	defer func() {
		stopServe()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-background-networking", true), chromedp.UserDataDir(t.TempDir()))
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	defer cancelTab()
	ctx, cancelAll := context.WithTimeout(ctx, 60*time.Second)
	defer cancelAll()

	button := `tbody.card[data-server="notes"] button.signin`
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+ln.Addr().String()+"/"), chromedp.WaitVisible(button)); err != nil {
		t.Fatalf("the Sign in button of notes: %v", err)
	}
	hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('tbody.card[data-server="up"] button.signin').hidden`))
	if err != nil || !hidden {
		t.Errorf("the Sign in button of a connected server: hidden %v (%v); want hidden", hidden, err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(button), chromedp.WaitVisible(`tbody.card[data-server="notes"] a.signin-link`)); err != nil {
		t.Fatalf("no sign-in link after the click: %v", err)
	}
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('tbody.card[data-server="notes"] a.signin-link').href`))
	if err != nil || href != authURL {
		t.Errorf("the sign-in link is %q (%v), want %q", href, err, authURL)
	}
	notes.mu.Lock()
	defer notes.mu.Unlock()
	if notes.started != 1 {
		t.Errorf("%d sign-ins started by one click, want 1", notes.started)
	}
}
