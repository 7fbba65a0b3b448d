package signin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// DefaultPollInterval is how often a [Handler] waiting for a sign-in
// re-reads its [Store]: a sign-in made by another process (mcpfsm auth
// login) is picked up within it.
const DefaultPollInterval = 2 * time.Second

// expiryMargin refreshes a token this long before it expires.
const expiryMargin = 30 * time.Second

// HandlerConfig configures a [Handler].
type HandlerConfig struct {
	Server   string // the config entry's name, for messages
	Resource string // the server's MCP URL: the protected resource
	Subject  string // whose credential; "" for the operator's own
	Store    Store
	// How tells a person how to sign in, such as "run: mcpfsm auth login
	// notion -config .mcp.json". It holds no secret.
	How string
	// Client makes the refresh requests; nil means http.DefaultClient.
	Client *http.Client
	// Clock paces the store's polling; nil means the real clock.
	Clock clock.Clock
	// PollInterval is how often WaitCredential re-reads the store; zero
	// means DefaultPollInterval.
	PollInterval time.Duration
	// OnSignInNeeded, if set, is called (without locks held) the first
	// time the handler finds no usable credential after having one or
	// none, with How: serve prints one line to stderr.
	OnSignInNeeded func(how string)
	// OnCredential, if set, is called when WaitCredential has found a
	// credential (signed in by any process): serve ends the sign-in it
	// started itself.
	OnCredential func()
}

// Handler is a conn.HTTP.OAuthHandler (go-sdk's auth.OAuthHandler) that
// authorizes requests with the credential its [Store] holds for the
// resource. It never opens a browser: a 401 it cannot answer by
// refreshing the token once is a [*conn.SignInError] saying how to sign
// in, and the supervisor waits in conn.NeedsAuthorization until
// WaitCredential sees a credential in the store.
type Handler struct {
	cfg HandlerConfig

	mu      sync.Mutex
	cred    *Credential // the credential in use; nil when none is usable
	refused string      // the fingerprint of the credential last refused
	asked   bool        // OnSignInNeeded was called since the last usable credential
	stepUp  []string    // the scopes a new sign-in asks for after an insufficient_scope
}

var (
	_ auth.OAuthHandler     = (*Handler)(nil)
	_ conn.CredentialWaiter = (*Handler)(nil)
)

// NewHandler returns a Handler for cfg.
func NewHandler(cfg HandlerConfig) *Handler {
	if cfg.Client == nil {
		cfg.Client = http.DefaultClient
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.New()
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	return &Handler{cfg: cfg}
}

// TokenSource implements auth.OAuthHandler: nil while there is no usable
// credential, so that requests go without Authorization.
func (h *Handler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	c, err := h.current(ctx)
	if err != nil || c == nil {
		return nil, err
	}
	return tokenSource{h}, nil
}

// current returns the credential in use, reading the store when there is
// none.
func (h *Handler) current(ctx context.Context) (*Credential, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cred != nil {
		return h.cred, nil
	}
	c, err := h.cfg.Store.Find(ctx, h.cfg.Subject, h.cfg.Resource)
	if err != nil {
		return nil, err
	}
	if c != nil && c.fingerprint() != h.refused {
		h.cred = c
	}
	return h.cred, nil
}

type tokenSource struct{ h *Handler }

// refreshTimeout bounds a refresh the SDK asks for without a context.
const refreshTimeout = 30 * time.Second

// Token returns the access token, refreshed first when it has expired.
func (t tokenSource) Token() (*oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(context.Background(), refreshTimeout)
	defer cancel()
	return t.h.token(ctx, false)
}

// token returns the credential's token, refreshing it when it expires
// within expiryMargin or when force is set.
func (h *Handler) token(ctx context.Context, force bool) (*oauth2.Token, error) {
	h.mu.Lock()
	c := h.cred
	h.mu.Unlock()
	if c == nil {
		return nil, &oauth2.RetrieveError{ErrorCode: "invalid_grant", ErrorDescription: "no credential"}
	}
	if !force && (c.Expiry.IsZero() || h.cfg.Clock.Now().Add(expiryMargin).Before(c.Expiry)) {
		return c.token(), nil
	}
	nc, err := h.refresh(ctx, c)
	if err != nil {
		return nil, err
	}
	return nc.token(), nil
}

// refresh replaces c by a refreshed credential, under the store's lock:
// a refresh another goroutine or process made meanwhile is taken as it
// is. A rotated refresh token replaces the old one in the store.
func (h *Handler) refresh(ctx context.Context, c *Credential) (*Credential, error) {
	unlock, err := h.cfg.Store.Lock(ctx, c.Key)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if stored, err := h.cfg.Store.Find(ctx, h.cfg.Subject, h.cfg.Resource); err == nil && stored != nil &&
		stored.AccessToken != c.AccessToken && h.cfg.Clock.Now().Add(expiryMargin).Before(stored.Expiry) {
		h.use(stored)
		return stored, nil
	}
	if c.RefreshToken == "" {
		return nil, &oauth2.RetrieveError{ErrorCode: "invalid_grant", ErrorDescription: "the credential has no refresh token"}
	}
	old := c.token()
	old.Expiry = time.Unix(1, 0) // make oauth2 refresh it now
	rctx := context.WithValue(ctx, oauth2.HTTPClient, h.cfg.Client)
	tok, err := c.config().TokenSource(rctx, old).Token()
	if err != nil {
		h.mu.Lock()
		if h.cred == c {
			h.refused, h.cred = c.fingerprint(), nil
		}
		h.mu.Unlock()
		return nil, cleanRefreshError(err)
	}
	nc := *c
	nc.AccessToken, nc.TokenType, nc.Expiry = tok.AccessToken, tok.TokenType, tok.Expiry
	if tok.RefreshToken != "" {
		nc.RefreshToken = tok.RefreshToken
	}
	nc.Saved = time.Now()
	if err := h.cfg.Store.Save(ctx, &nc); err != nil {
		return nil, err
	}
	h.use(&nc)
	return &nc, nil
}

// cleanRefreshError keeps what the authorization server said (its error
// code) and drops its body, which may quote a token.
func cleanRefreshError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		code := re.ErrorCode
		if code == "" && re.Response != nil {
			code = re.Response.Status
		}
		return &oauth2.RetrieveError{Response: re.Response, ErrorCode: re.ErrorCode, ErrorDescription: "refresh refused: " + code}
	}
	return fmt.Errorf("refreshing the token: %w", errors.Unwrap(err))
}

// use makes c the credential in use.
func (h *Handler) use(c *Credential) {
	h.mu.Lock()
	h.cred, h.asked = c, false
	h.mu.Unlock()
}

// Authorize implements auth.OAuthHandler. On a 401 (or a 403 asking for
// more scope) it refreshes the token the request carried, once, and has
// the request retried; without a credential, or when the refresh fails,
// it returns a [*conn.SignInError] saying how to sign in. Other 403s are
// returned as they are (the supervisor stops in auth-refused).
func (h *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header[http.CanonicalHeaderKey("WWW-Authenticate")])
	resp.Body.Close()
	if resp.StatusCode == http.StatusForbidden && bearerError(challenges) != "insufficient_scope" {
		return nil // the retry meets the same 403: auth-refused
	}
	var cause error
	h.mu.Lock()
	c := h.cred
	h.mu.Unlock()
	if c != nil && req.Header.Get("Authorization") == "Bearer "+c.AccessToken {
		if resp.StatusCode == http.StatusUnauthorized && c.RefreshToken != "" {
			if _, err := h.refresh(ctx, c); err == nil {
				return nil
			} else {
				cause = err
			}
		}
		h.mu.Lock()
		if h.cred == c {
			h.refused, h.cred = c.fingerprint(), nil
		}
		h.mu.Unlock()
	} else if c2, err := h.current(ctx); err != nil {
		cause = err
	} else if c2 != nil && req.Header.Get("Authorization") != "Bearer "+c2.AccessToken {
		return nil // a credential arrived since the request was made
	}
	if resp.StatusCode == http.StatusForbidden {
		cause = errors.Join(cause, errors.New("the server asks for more scope than the credential has"))
		// Step-up: the next sign-in asks for the scopes the credential
		// had and those the server challenged with.
		var want []string
		if c != nil {
			want = append(want, c.Scopes...)
		}
		for _, ch := range challenges {
			if ch.Scheme == "bearer" {
				want = append(want, strings.Fields(ch.Params["scope"])...)
			}
		}
		slices.Sort(want)
		h.mu.Lock()
		h.stepUp = slices.Compact(want)
		h.mu.Unlock()
	}
	h.mu.Lock()
	notify := !h.asked && h.cfg.OnSignInNeeded != nil
	h.asked = true
	h.mu.Unlock()
	if notify {
		h.cfg.OnSignInNeeded(h.cfg.How)
	}
	return &conn.SignInError{How: h.cfg.How, Err: cause}
}

// StepUpScopes returns the scopes a new sign-in should ask for after the
// server refused the credential for lack of scope (insufficient_scope):
// the credential's and the challenged ones. It is nil otherwise.
func (h *Handler) StepUpScopes() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.stepUp)
}

// bearerError is the error parameter of the Bearer challenge.
func bearerError(cs []oauthex.Challenge) string {
	for _, c := range cs {
		if c.Scheme == "bearer" {
			return c.Params["error"]
		}
	}
	return ""
}

// WaitCredential implements conn.CredentialWaiter: it re-reads the store
// every PollInterval, and at once when a store with a Changed method (such
// as [FileStore]) reports a change, until it holds a credential other than
// the one the server refused.
func (h *Handler) WaitCredential(ctx context.Context) error {
	var changed <-chan struct{}
	for {
		if n, ok := h.cfg.Store.(interface{ Changed() <-chan struct{} }); ok {
			changed = n.Changed() // before the read: a save after it wakes the wait
		}
		if c, err := h.current(ctx); err == nil && c != nil {
			if h.cfg.OnCredential != nil {
				h.cfg.OnCredential()
			}
			return nil
		}
		t := h.cfg.Clock.Timer(h.cfg.PollInterval)
		select {
		case <-t.C:
		case <-changed:
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}
