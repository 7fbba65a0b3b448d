package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mcpfsm/mcpfsm/access"
	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/front"
	"github.com/mcpfsm/mcpfsm/host"
	"github.com/mcpfsm/mcpfsm/internal/redact"
	"github.com/mcpfsm/mcpfsm/signin"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

const authUsage = `Usage:
  mcpfsm auth login NAME -config FILE [-timeout 10m]
  mcpfsm auth status -config FILE
  mcpfsm auth logout NAME -config FILE

Signs in to the remote (url) server NAME of FILE that needs OAuth, as
the hosts do: mcpfsm discovers the server's authorization server,
registers itself there (or uses the entry's oauth.clientId, Gemini CLI's
oauth block or Cursor's auth.CLIENT_ID), opens the authorization URL with
$BROWSER when it is set, else xdg-open or open (and prints it), waits for
the redirect on http://localhost:PORT/callback (oauth.callbackPort, or a
free port) and stores the credential. A running 'mcpfsm serve' or 'run'
picks it up within seconds, without a restart, and refreshes it.

Credentials are kept in $XDG_STATE_HOME/mcpfsm/credentials (or
~/.local/state/mcpfsm/credentials), one file per server at mode 0600;
with -credential-store redis://HOST:PORT/DB (or $MCPFSM_CREDENTIAL_STORE)
in Redis, shared by every replica given the same store, each value
encrypted with the key in $MCPFSM_CREDENTIAL_KEY (32 random bytes in
base64: openssl rand -base64 32).
status lists the servers of FILE and whether each is signed in; logout
deletes NAME's credential.

Exit status: 0 when the credential is stored (login), listed (status) or
removed (logout); 1 on failure; 2 on bad usage.
`

// credentialStoreEnv names the credential store when -credential-store
// is not given (the Helm chart sets it from a Secret).
const credentialStoreEnv = "MCPFSM_CREDENTIAL_STORE"

// credentialStore is the store of sign-in credentials spec names
// (-credential-store, else $MCPFSM_CREDENTIAL_STORE): a Redis store shared
// by replicas, its values encrypted with $MCPFSM_CREDENTIAL_KEY, or by
// default the files of mcpfsm's state directory. A Redis store is reached
// and its key checked at once; it lives as long as the process, and
// cmdAuth closes it.
func credentialStore(spec string) (signin.Store, error) {
	flag := "-credential-store"
	if spec == "" {
		spec, flag = os.Getenv(credentialStoreEnv), credentialStoreEnv
	}
	if spec == "" {
		dir, err := access.StateDir()
		if err != nil {
			return nil, err
		}
		return signin.NewFileStore(filepath.Join(dir, "credentials")), nil
	}
	scheme, _, _ := strings.Cut(spec, "://")
	if scheme != "redis" && scheme != "rediss" && scheme != "unix" {
		return nil, fmt.Errorf("%s %s: give redis://[:PASSWORD@]HOST:PORT/DB, rediss://... or unix:///PATH?db=N, or nothing for files in the state directory", flag, redact.URL(spec))
	}
	key, err := signin.KeyFromEnv()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, redact.URL(spec), err)
	}
	s, err := signin.OpenRedis(signin.RedisConfig{URL: spec, Key: key})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Check(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// loginHint is how a person signs in to server of the config at path.
func loginHint(server, path string) string {
	return "run: mcpfsm auth login " + shellWord(server) + " -config " + shellWord(path)
}

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`;&|<>()*?[]#~!{}") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// errSaid marks the store's error as printed.
var errSaid = errors.New("said")

// signIns are the sign-ins of one mcpfsm command (serve, run, tools,
// call): one signin.Handler per server, kept across reloads, and the
// sign-ins it starts by itself when a server needs one (signin.Flows):
// each shows its authorization URL in one stderr line with the
// mcpfsm auth login command, opens $BROWSER when it is set, and asks
// the front's clients with a URL elicitation (serve over stdio).
type signIns struct {
	cmd, path string
	stderr    io.Writer
	store     signin.Store
	flows     *signin.Flows

	mu       sync.Mutex
	err      error // the state directory's, said once
	handlers map[string]*signin.Handler
	servers  map[string]config.Server // by name, for the sign-ins started by calls
	front    *front.Front             // asked to show the URL to its clients; nil without one

	// A gateway with OAuth callers (serve -oauth-issuer): the handlers of
	// each caller's own credentials, by server, URL and subject, and
	// where their sign-ins' redirects land (serve's own address).
	callers    map[string]*signin.Handler
	exchangers map[string]*signin.Exchanger // by server and URL (upstreamAuth tokenExchange)
	redirects  *signin.Redirects
	callback   string // the redirect URL; "" when callers sign in to nothing
}

// newSignIns makes the sign-ins of cmd, whose config file is path, with
// the credential store storeSpec names (see credentialStore).
func newSignIns(cmd, path, storeSpec string, stderr io.Writer, logger *slog.Logger) *signIns {
	if stderr == nil {
		stderr = io.Discard
	}
	s := &signIns{cmd: cmd, path: path, stderr: stderr, handlers: map[string]*signin.Handler{},
		servers: map[string]config.Server{}, callers: map[string]*signin.Handler{}, exchangers: map[string]*signin.Exchanger{}}
	s.store, s.err = credentialStore(storeSpec)
	s.flows = signin.NewFlows(signin.FlowsConfig{Show: s.show, Ended: s.ended, Logger: logger})
	return s
}

// close ends the sign-ins under way, then closes the credential store
// if it holds connections (a Redis store: its pool and subscription).
func (s *signIns) close() {
	s.flows.Close()
	if c, ok := s.store.(io.Closer); ok {
		if err := c.Close(); err != nil {
			fmt.Fprintf(s.stderr, "mcpfsm %s: closing the credential store: %v\n", s.cmd, err)
		}
	}
}

// setFront has f ask its clients to open the sign-ins' URLs.
func (s *signIns) setFront(f *front.Front) {
	s.mu.Lock()
	s.front = f
	s.mu.Unlock()
}

// handler is host.Options.SignIn: the OAuth handler of server srv,
// whose first need of a sign-in starts one. Without a state directory it
// gives none (saying why once): such a server stops in auth-refused.
func (s *signIns) handler(srv config.Server) auth.OAuthHandler {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		if s.err != errSaid { // said once, when an http server first needs a store
			fmt.Fprintf(s.stderr, "mcpfsm %s: remote servers that need a sign-in cannot be signed in to: %v\n", s.cmd, s.err)
			s.err = errSaid
		}
		return nil
	}
	key := srv.Name + "\x00" + srv.URL
	s.servers[srv.Name] = srv
	if s.callersOnly(srv) {
		// Each caller signs in as itself: the shared instance holds no
		// credential, and the operator's is never sent for a caller.
		return callersSignIn{server: srv.Name}
	}
	if h, ok := s.handlers[key]; ok {
		return h
	}
	name := srv.Name
	h := signin.NewHandler(signin.HandlerConfig{
		Server: name, Resource: srv.URL, Store: s.store, How: loginHint(name, s.path),
		OnSignInNeeded: func(string) { s.start(name, "") },
		OnCredential:   func() { s.flows.Cancel(name, "") },
	})
	s.handlers[key] = h
	return h
}

// perCaller has the OAuth callers of serve sign in to servers as
// themselves (upstreamAuth "per-caller", the default with OAuth callers):
// their sign-ins' redirects land on r, served at callback.
func (s *signIns) perCaller(r *signin.Redirects, callback string) {
	s.mu.Lock()
	s.redirects, s.callback = r, callback
	s.mu.Unlock()
}

// callersOnly reports whether srv is signed in to by each OAuth caller
// as itself, so that no one's credential is the shared instance's; s.mu
// is held.
func (s *signIns) callersOnly(srv config.Server) bool {
	return s.callback != "" && srv.UpstreamAuth != config.UpstreamAuthShared
}

// callersOnlyLocked is callersOnly taking s.mu.
func (s *signIns) callersOnlyLocked(srv config.Server) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.callersOnly(srv)
}

// callersSignIn is the OAuth handler of the shared instance of a server
// each OAuth caller signs in to as itself: it holds no credential (the
// operator's is never used for a caller), and its 401 is a sign-in state
// saying so, with no sign-in started.
type callersSignIn struct{ server string }

// TokenSource implements auth.OAuthHandler: none.
func (callersSignIn) TokenSource(context.Context) (oauth2.TokenSource, error) { return nil, nil }

// Authorize implements auth.OAuthHandler: a 401 needs a caller's sign-in.
func (h callersSignIn) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		return nil
	}
	return &conn.SignInError{How: "each caller signs in to " + shellWord(h.server) + " as itself (upstreamAuth \"per-caller\", the default with -oauth-issuer), " +
		"so serve's shared instance holds no credential; give the server \"upstreamAuth\": \"shared\" to sign in once for every caller"}
}

// ownCredential reports whether subject's requests to srv carry
// subject's own credential; s.mu is held.
func (s *signIns) ownCredential(srv config.Server, subject string) bool {
	return subject != "" && s.callback != "" && srv.UpstreamAuth != config.UpstreamAuthShared
}

// callerHandler is front.Options.CallerSignIn: the OAuth handler of
// subject's own credential to server, for subject's own instance of it;
// nil when server is signed in to by the operator for all (upstreamAuth
// "shared", no OAuth callers, not an http server that signs in). Its
// first need of a sign-in starts one for subject alone.
//
// With upstreamAuth {"tokenExchange": {...}} the handler trades the
// caller's own access token (token) for the server's (signin.Exchanger);
// the caller never signs in to the server.
func (s *signIns) callerHandler(server, subject string, token func(context.Context) (string, error)) auth.OAuthHandler {
	s.mu.Lock()
	defer s.mu.Unlock()
	srv, ok := s.servers[server] // set when the host gave the server a handler
	if !ok || s.store == nil || !s.ownCredential(srv, subject) {
		return nil
	}
	if x := srv.TokenExchange; x != nil {
		ekey := srv.Name + "\x00" + srv.URL
		e, ok := s.exchangers[ekey]
		if !ok {
			var err error
			e, err = signin.NewExchanger(signin.ExchangeConfig{Server: server, Resource: srv.URL, TokenURL: x.TokenURL,
				Issuer: x.Issuer, Audience: x.Audience, ClientID: x.ClientID, ClientSecret: x.Secret, Scopes: x.Scopes, Store: s.store})
			if err != nil { // the caller signs in instead: never the operator's credential
				fmt.Fprintf(s.stderr, "mcpfsm %s: server %q: %v; its callers sign in instead\n", s.cmd, server, err)
			} else {
				s.exchangers[ekey] = e
			}
		}
		if e != nil {
			return e.ForCaller(subject, token)
		}
	}
	key := srv.Name + "\x00" + srv.URL + "\x00" + subject
	if h, ok := s.callers[key]; ok {
		return h
	}
	h := signin.NewHandler(signin.HandlerConfig{
		Server: server, Resource: srv.URL, Subject: subject, Store: s.store, How: "sign in when your client asks you to",
		OnSignInNeeded: func(string) { s.start(server, subject) },
		OnCredential:   func() { s.flows.Cancel(server, subject) },
	})
	s.callers[key] = h
	return h
}

// start starts the sign-in of subject to server unless one is under way.
// A caller's sign-in (subject not "") is started only where the server's
// credential is the caller's own; its redirect lands on serve's address.
func (s *signIns) start(server, subject string) *signin.Flow {
	s.mu.Lock()
	srv, ok := s.servers[server]
	own := ok && s.ownCredential(srv, subject)
	var h *signin.Handler
	if own {
		h = s.callers[srv.Name+"\x00"+srv.URL+"\x00"+subject]
	} else {
		h = s.handlers[srv.Name+"\x00"+srv.URL]
	}
	redirects, callback := s.redirects, s.callback
	s.mu.Unlock()
	if !ok || s.store == nil || (subject != "" && !own) || (subject == "" && s.callersOnlyLocked(srv)) {
		return nil
	}
	client := clientOf(srv.OAuth)
	if h != nil && len(client.Scopes) == 0 {
		client.Scopes = h.StepUpScopes() // step-up: the scopes the server challenged with too
	}
	lc := signin.LoginConfig{Server: server, Resource: srv.URL, Subject: subject, Store: s.store, Client: client}
	if own {
		// The caller's browser reaches serve, not a loopback port of its
		// host: the redirect lands on serve's own address, its state
		// bound to subject, single use, and awaited for a short while.
		lc.Redirects, lc.RedirectURL, lc.RedirectTTL = redirects, callback, callerRedirectTTL
	}
	f, _ := s.flows.Start(lc)
	return f
}

// callerURLWait bounds how long a caller's call that needs a sign-in
// waits for the sign-in's authorization URL.
const callerURLWait = 10 * time.Second

// callerRedirectTTL bounds how long a caller's sign-in waits for its
// redirect: its state is refused after it.
const callerRedirectTTL = 10 * time.Minute

// show says where to sign in: one stderr line, $BROWSER, and the front's
// clients of the sign-in's subject.
func (s *signIns) show(_ context.Context, f *signin.Flow) {
	s.mu.Lock()
	fr := s.front
	s.mu.Unlock()
	if f.Subject != "" {
		// A caller's sign-in: its URL goes to that caller's clients alone
		// (whoever opens it signs in as that caller), never to the
		// operator's stderr or browser.
		if fr != nil {
			fr.AskSignIn(f.Subject, f.Server, f.URL(), f.ID)
		}
		fmt.Fprintf(s.stderr, "mcpfsm %s: server %q needs a sign-in by caller %q: asking its client\n", s.cmd, f.Server, f.Subject)
		return
	}
	// The front learns of the sign-in first: once the line is out, a
	// client's next call may already ask its caller (a 2026-07-28
	// client is asked in no other way).
	if fr != nil {
		fr.AskSignIn(f.Subject, f.Server, f.URL(), f.ID)
	}
	fmt.Fprintf(s.stderr, "mcpfsm %s: server %q needs a sign-in: open %s (or %s)\n", s.cmd, f.Server, f.URL(), loginHint(f.Server, s.path))
	if err := signin.StartBrowser(f.URL()); err != nil {
		fmt.Fprintf(s.stderr, "mcpfsm %s: $BROWSER: %v; open the URL yourself\n", s.cmd, err)
	}
}

// ended tells the front's clients the sign-in has ended, and says why it
// failed.
func (s *signIns) ended(f *signin.Flow, err error) {
	s.mu.Lock()
	fr := s.front
	s.mu.Unlock()
	if fr != nil {
		fr.EndSignIn(f.ID)
	}
	if err != nil && !errors.Is(err, signin.ErrFlowsClosed) && !errors.Is(err, signin.ErrFlowCanceled) {
		fmt.Fprintf(s.stderr, "mcpfsm %s: server %q: %v; the next call starts a new sign-in, or %s\n", s.cmd, f.Server, err, loginHint(f.Server, s.path))
	}
}

// hint is front.Options.SignInHint: the sign-in under way (started now
// if the last one ended) and the command.
//
// A caller's hint (subject not "") names its own sign-in alone where the
// server's credential is the caller's; elsewhere the sign-in is the
// operator's, and the caller is told only the command.
func (s *signIns) hint(server, subject string) string {
	how := loginHint(server, s.path)
	s.mu.Lock()
	srv, ok := s.servers[server]
	own := ok && s.ownCredential(srv, subject)
	s.mu.Unlock()
	if subject != "" && !own {
		return "the operator signs in to it (" + how + ")"
	}
	if subject == "" && ok && s.callersOnlyLocked(srv) {
		return "each caller signs in to it as itself; the operator's credential is not used for it (upstreamAuth \"shared\" would)"
	}
	if subject != "" {
		s.mu.Lock()
		e, exchanged := s.exchangers[srv.Name+"\x00"+srv.URL]
		s.mu.Unlock()
		if exchanged {
			// The caller's token is exchanged, never signed in with: say
			// why the exchange was refused, not where to sign in.
			if err := e.Refused(subject); err != nil {
				return "mcpfsm could not exchange your token for one of this server: " + err.Error() +
					" (the operator fixes upstreamAuth.tokenExchange of " + shellWord(server) + "); or sign in to your identity provider again, then call again"
			}
			return ""
		}
	}
	f := s.flows.Pending(server, subject)
	if f == nil {
		f = s.start(server, subject)
	}
	if own {
		if f != nil {
			// A caller has no stderr to read the URL on: its call waits
			// a moment for the authorization URL (discovery, registration).
			t := time.NewTimer(callerURLWait)
			select {
			case <-f.Shown():
			case <-f.Done():
			case <-t.C:
			}
			t.Stop()
		}
		if f != nil && f.URL() != "" {
			return "open " + f.URL() + " to sign in as yourself (the sign-in is under way; the link is yours alone)"
		}
		return "call again in a moment for the sign-in link"
	}
	if f != nil && f.URL() != "" {
		return "open " + f.URL() + " to sign in (the sign-in is under way), or " + how
	}
	return how
}

// operatorSignIn is the console's start of the operator's sign-in to
// server (console.SignInStarter): the sign-in under way, or a new one,
// and its authorization URL once it has one (its stderr line and
// $BROWSER as for any other). Its errors leave the server out: the
// console's answer names it first.
func (s *signIns) operatorSignIn(ctx context.Context, server string) (string, error) {
	s.mu.Lock()
	srv, ok := s.servers[server]
	callers := ok && s.callersOnly(srv)
	s.mu.Unlock()
	if callers {
		return "", errors.New("each caller signs in to this server as itself; the operator has no sign-in to it (\"upstreamAuth\": \"shared\" gives one for all)")
	}
	f := s.flows.Pending(server, "")
	if f == nil {
		f = s.start(server, "")
	}
	if f == nil {
		return "", fmt.Errorf("no sign-in this host can start to this server (is it a url server of %s, with a credential store?)", s.path)
	}
	t := time.NewTimer(callerURLWait)
	defer t.Stop()
	select {
	case <-f.Shown():
		return f.URL(), nil
	case <-f.Done():
		if err := f.Err(); err != nil {
			return "", err
		}
		return "", errors.New("the sign-in ended before it had a URL: the server is signed in to")
	case <-t.C:
		return "", fmt.Errorf("no authorization URL after %v (discovery or registration is slow); try again", callerURLWait)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func cmdAuth(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		if len(args) == 0 {
			fmt.Fprint(stderr, authUsage)
			return exitUsage
		}
		fmt.Fprint(stdout, authUsage)
		return exitOK
	}
	sub := args[0]
	switch sub {
	case "login", "logout", "status":
	default:
		return usageErr(stderr, "auth", "unknown subcommand %q: give login, status or logout", sub)
	}
	fs := newFlags("auth "+sub, authUsage)
	hf := addHostFlags(fs, "auth "+sub, "warn")
	timeout := fs.Duration("timeout", 10*time.Minute, "how long login waits for the sign-in")
	// NAME may come before the flags, as the usage shows it.
	rest := args[1:]
	var name string
	if sub != "status" && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		name, rest = rest[0], rest[1:]
	}
	if code, ok := parseFlags(fs, rest, stdout, stderr); !ok {
		return code
	}
	if sub != "status" && name == "" && fs.NArg() == 1 {
		name = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return usageErr(stderr, "auth", "unexpected argument %q", fs.Arg(0))
	}
	if sub != "status" && name == "" {
		return usageErr(stderr, "auth", "give the server's NAME: mcpfsm auth %s NAME -config FILE", sub)
	}
	_, cfg, stderr, code := hf.load(stderr)
	if cfg == nil {
		return code
	}
	store, err := credentialStore(*hf.store)
	if err != nil {
		fmt.Fprintf(stderr, "mcpfsm auth %s: %v\n", sub, err)
		return exitFail
	}
	if c, ok := store.(io.Closer); ok {
		defer c.Close()
	}
	if sub == "status" {
		return authStatus(ctx, cfg, store, stdout, stderr)
	}
	var srv *config.Server
	var names []string
	for i := range cfg.Servers {
		if cfg.Servers[i].URL != "" {
			names = append(names, cfg.Servers[i].Name)
		}
		if cfg.Servers[i].Name == name {
			srv = &cfg.Servers[i]
		}
	}
	if srv == nil || srv.Type != config.TypeHTTP {
		return usageErr(stderr, "auth", "%s has no Streamable HTTP server %q (its url servers: %s)", *hf.path, name, strings.Join(names, ", "))
	}
	if sub == "logout" {
		n, err := store.Delete(ctx, "", srv.URL)
		if err != nil {
			fmt.Fprintf(stderr, "mcpfsm auth logout: %v\n", err)
			return exitFail
		}
		fmt.Fprintf(stdout, "server %q: %d credential(s) removed\n", name, n)
		return exitOK
	}
	lctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	c, err := signin.Login(lctx, signin.LoginConfig{
		Server: name, Resource: srv.URL, Store: store, Client: clientOf(srv.OAuth), Open: signin.OpenBrowser(stderr),
	})
	if err != nil {
		fmt.Fprintf(stderr, "mcpfsm auth login: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(stdout, "server %q: signed in (issuer %s, client %s); a running mcpfsm picks the credential up without a restart\n", name, c.Issuer, c.Client)
	return exitOK
}

// clientOf is the sign-in's client from the entry's oauth keys.
func clientOf(o *config.OAuth) signin.Client {
	if o == nil {
		return signin.Client{}
	}
	return signin.Client{ClientID: o.ClientID, ClientSecret: o.ClientSecret, Scopes: o.Scopes, CallbackPort: o.CallbackPort,
		AuthServerMetadataURL: o.AuthServerMetadataURL, AuthorizationURL: o.AuthorizationURL, TokenURL: o.TokenURL,
		ClientMetadataURL: o.ClientMetadataURL}
}

// authStatus prints, for each url server of cfg, whether it is signed in.
func authStatus(ctx context.Context, cfg *config.Config, store signin.Store, stdout, stderr io.Writer) int {
	code := exitOK
	for _, s := range cfg.Servers {
		if s.Type != config.TypeHTTP {
			continue
		}
		c, err := store.Find(ctx, "", s.URL)
		switch {
		case err != nil:
			fmt.Fprintf(stderr, "mcpfsm auth status: %v\n", err)
			code = exitFail
		case c == nil:
			fmt.Fprintf(stdout, "%s\tnot signed in\n", s.Name)
		default:
			exp := "no expiry"
			if !c.Expiry.IsZero() {
				exp = "expires " + c.Expiry.Format(time.RFC3339)
			}
			refresh := "no refresh token"
			if c.RefreshToken != "" {
				refresh = "refreshable"
			}
			fmt.Fprintf(stdout, "%s\tsigned in\tissuer %s\tclient %s\t%s\t%s\n", s.Name, c.Issuer, c.Client, exp, refresh)
		}
	}
	return code
}

// upWatch tells when servers come up: its record is a host's
// Options.OnTransition.
type upWatch struct {
	mu sync.Mutex
	up map[string]chan struct{}
}

func newUpWatch() *upWatch { return &upWatch{up: map[string]chan struct{}{}} }

func (u *upWatch) ch(server string) chan struct{} {
	ch, ok := u.up[server]
	if !ok {
		ch = make(chan struct{})
		u.up[server] = ch
	}
	return ch
}

// record notes a transition to established.
func (u *upWatch) record(t conn.Transition) {
	if t.To != conn.Established {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	ch := u.ch(t.Server)
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// came returns a channel closed once server has been established.
func (u *upWatch) came(server string) <-chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.ch(server)
}

// await waits, for tools and call, until each server of hs that needs a
// sign-in has been signed in (by the sign-in this command started, or
// by mcpfsm auth login) and is up, its sign-in has failed, or ctx ends;
// then up to timeout more for it to come up. It returns the servers
// that came up.
func (s *signIns) await(ctx context.Context, hs *host.Host, up *upWatch, timeout time.Duration) map[string]bool {
	came := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, st := range hs.Status() {
		if st.Status.State != conn.NeedsAuthorization {
			continue
		}
		name := st.Config.Name
		wg.Go(func() {
			var failed <-chan struct{}
			if f := s.flows.Pending(name, ""); f != nil {
				failed = f.Done()
			}
			select {
			case <-up.came(name):
				mu.Lock()
				came[name] = true
				mu.Unlock()
				return
			case <-failed:
			case <-ctx.Done():
				return
			}
			// The sign-in ended: signed in, the server comes up now.
			t := time.NewTimer(timeout)
			defer t.Stop()
			select {
			case <-up.came(name):
				mu.Lock()
				came[name] = true
				mu.Unlock()
			case <-t.C:
			case <-ctx.Done():
			}
		})
	}
	wg.Wait()
	return came
}
