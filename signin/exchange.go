package signin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// TokenTypeAccessToken is RFC 8693's type of an OAuth access token, the
// type of the token a gateway's caller presented and of the one the
// exchange asks for.
const TokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"

// ExchangeConfig configures an [Exchanger]: where a gateway trades its
// callers' own access tokens for tokens of an upstream server (the
// config's "upstreamAuth": {"tokenExchange": {...}}), when the upstream's
// authorization server trusts the identity provider the callers sign in
// with.
type ExchangeConfig struct {
	Server   string // the config entry's name, for messages
	Resource string // the upstream's MCP URL: the resource parameter (RFC 8707)
	// TokenURL is the upstream authorization server's token endpoint.
	TokenURL string
	// Issuer is that authorization server's issuer; it keys the stored
	// credentials and is the audience when Audience is empty.
	Issuer string
	// Audience is the exchange's audience parameter; empty means Issuer,
	// else Resource.
	Audience string
	// ClientID and ClientSecret are the gateway's client at the upstream's
	// authorization server (the secret may be empty: a public client).
	ClientID, ClientSecret string
	// Scopes are asked for in the exchange.
	Scopes []string
	// SubjectTokenType is the type of the callers' tokens; empty means
	// TokenTypeAccessToken.
	SubjectTokenType string
	// Store keeps each caller's exchanged credential (keyed by the
	// caller's subject, the issuer, the resource and the client): a
	// [RedisStore] shares them between replicas.
	Store Store
	// Client makes the exchange and refresh requests; nil means
	// http.DefaultClient.
	Client *http.Client
	// Clock tells when a token expires; nil means the real clock.
	Clock clock.Clock
}

// Exchanger gets tokens of an upstream for a gateway's callers by RFC
// 8693 token exchange (go-sdk's oauthex.ExchangeToken): each caller's
// token is used only for that caller's requests. A caller's exchanged
// token is kept in the Store under the caller's subject, used while it is
// valid, refreshed when it expires (if the authorization server gave a
// refresh token), and exchanged anew when the refresh is refused; one
// exchange or refresh in flight per caller and credential, across
// replicas when the Store is shared.
type Exchanger struct {
	cfg ExchangeConfig

	mu      sync.Mutex
	refusal map[string]error // by subject: why its last exchange was refused
}

// NewExchanger returns an Exchanger for cfg; the error names the missing
// field.
func NewExchanger(cfg ExchangeConfig) (*Exchanger, error) {
	switch {
	case cfg.Resource == "":
		return nil, errors.New("token exchange: the upstream's url (Resource) is required")
	case cfg.TokenURL == "":
		return nil, fmt.Errorf("token exchange for %s: upstreamAuth.tokenExchange needs the authorization server's token endpoint (tokenUrl)", cfg.Server)
	case cfg.ClientID == "":
		return nil, fmt.Errorf("token exchange for %s: upstreamAuth.tokenExchange needs the gateway's client at the authorization server (clientId)", cfg.Server)
	case cfg.Store == nil:
		return nil, errors.New("token exchange: a credential Store is required")
	}
	if cfg.Issuer == "" {
		cfg.Issuer = cfg.TokenURL
	}
	if cfg.Audience == "" {
		cfg.Audience = cfg.Issuer
	}
	if cfg.SubjectTokenType == "" {
		cfg.SubjectTokenType = TokenTypeAccessToken
	}
	if cfg.Client == nil {
		cfg.Client = http.DefaultClient
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.New()
	}
	return &Exchanger{cfg: cfg}, nil
}

// key is the stored credential's key for subject.
func (e *Exchanger) key(subject string) Key {
	return Key{Subject: subject, Issuer: e.cfg.Issuer, Resource: e.cfg.Resource, Client: e.cfg.ClientID}
}

// valid reports whether c can be sent now.
func (e *Exchanger) valid(c *Credential) bool {
	return c != nil && c.Client == e.cfg.ClientID && c.Issuer == e.cfg.Issuer &&
		(c.Expiry.IsZero() || e.cfg.Clock.Now().Add(expiryMargin).Before(c.Expiry))
}

// Token returns an access token of the upstream for the caller subject,
// whose own access token subjectToken gives: the stored one while it is
// valid, else a refreshed or newly exchanged one (stored). refused, if
// not empty, is an access token the upstream refused: it is not returned
// again. Errors carry the authorization server's error code, never a
// token.
func (e *Exchanger) Token(ctx context.Context, subject string, subjectToken func(context.Context) (string, error), refused string) (*oauth2.Token, error) {
	if subject == "" {
		return nil, fmt.Errorf("token exchange for %s: the caller has no subject; token exchange needs OAuth callers (-oauth-issuer)", e.cfg.Server)
	}
	usable := func(c *Credential) bool { return e.valid(c) && c.AccessToken != refused }
	c, err := e.cfg.Store.Find(ctx, subject, e.cfg.Resource)
	if err != nil {
		return nil, err
	}
	if usable(c) {
		return c.token(), nil
	}
	k := e.key(subject)
	unlock, err := e.cfg.Store.Lock(ctx, k)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Another goroutine or replica may have done it meanwhile.
	if c, err = e.cfg.Store.Find(ctx, subject, e.cfg.Resource); err != nil {
		return nil, err
	}
	if usable(c) {
		return c.token(), nil
	}
	rctx := context.WithValue(ctx, oauth2.HTTPClient, e.cfg.Client)
	var tok *oauth2.Token
	if c != nil && c.RefreshToken != "" && c.Client == e.cfg.ClientID && c.Issuer == e.cfg.Issuer {
		old := c.token()
		old.Expiry = time.Unix(1, 0) // make oauth2 refresh it now
		tok, _ = c.config().TokenSource(rctx, old).Token()
		// A refused refresh falls back to a new exchange.
	}
	if tok == nil {
		st, err := subjectToken(ctx)
		if err != nil {
			return nil, fmt.Errorf("token exchange for %s: the caller's token: %w", e.cfg.Server, err)
		}
		creds := &oauthex.ClientCredentials{ClientID: e.cfg.ClientID}
		if e.cfg.ClientSecret != "" {
			creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: e.cfg.ClientSecret}
		}
		tok, err = oauthex.ExchangeToken(ctx, e.cfg.TokenURL, &oauthex.TokenExchangeRequest{
			RequestedTokenType: TokenTypeAccessToken, Audience: e.cfg.Audience, Resource: e.cfg.Resource,
			Scope: e.cfg.Scopes, SubjectToken: st, SubjectTokenType: e.cfg.SubjectTokenType,
		}, creds, e.cfg.Client)
		if err != nil {
			err = e.exchangeError(err)
			if errors.Is(err, ErrExchangeRefused) {
				e.setRefused(subject, err)
			}
			return nil, err
		}
	}
	e.setRefused(subject, nil)
	nc := &Credential{Key: k, Server: e.cfg.Server, AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken,
		Expiry: tok.Expiry, Scopes: e.cfg.Scopes, ClientSecret: e.cfg.ClientSecret, TokenURL: e.cfg.TokenURL,
		AuthStyle: int(oauth2.AuthStyleInParams), Saved: time.Now()}
	if err := e.cfg.Store.Save(ctx, nc); err != nil {
		return nil, err
	}
	return nc.token(), nil
}

// ErrExchangeRefused is matched by the error of a token exchange the
// authorization server answered with an error (an untrusted or expired
// caller's token, a client it does not know): no retry of the same
// exchange can succeed.
var ErrExchangeRefused = errors.New("token exchange refused")

// Refused returns why the last token exchange for subject was refused,
// or nil when it was not (or a later one succeeded).
func (e *Exchanger) Refused(subject string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.refusal[subject]
}

func (e *Exchanger) setRefused(subject string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err == nil {
		delete(e.refusal, subject)
		return
	}
	if e.refusal == nil {
		e.refusal = map[string]error{}
	}
	e.refusal[subject] = err
}

// exchangeError keeps the authorization server's error code and drops
// its body, which may quote a token.
func (e *Exchanger) exchangeError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && (re.Response == nil || re.Response.StatusCode < 500) {
		code := re.ErrorCode
		if code == "" && re.Response != nil {
			code = re.Response.Status
		}
		return fmt.Errorf("%w for %s (%s) by %s; check that the upstream's authorization server trusts the callers' identity provider and knows client %s",
			ErrExchangeRefused, e.cfg.Server, code, scrubText(e.cfg.TokenURL), e.cfg.ClientID)
	}
	return fmt.Errorf("token exchange for %s at %s: %s", e.cfg.Server, scrubText(e.cfg.TokenURL), scrubText(err.Error()))
}

// ForCaller returns the conn.HTTP.OAuthHandler of one caller's instance
// of the upstream: its requests carry the token exchanged for that
// caller (subject), whose own current access token subjectToken returns.
func (e *Exchanger) ForCaller(subject string, subjectToken func(context.Context) (string, error)) *ExchangeHandler {
	return &ExchangeHandler{e: e, subject: subject, subjectToken: subjectToken}
}

// ExchangeHandler is an auth.OAuthHandler for one caller; see
// [Exchanger.ForCaller]. It is a conn.CredentialWaiter: after a refused
// exchange the caller's supervisor waits in needs-authorization until
// the caller comes with another token of its own.
type ExchangeHandler struct {
	e            *Exchanger
	subject      string
	subjectToken func(context.Context) (string, error)

	mu        sync.Mutex
	refused   string // the access token the upstream last refused
	denied    error  // why the exchange of deniedFor was refused; nil when it was not
	deniedFor string // the caller's own token whose exchange was refused
	// poll ticks every DefaultPollInterval while an exchange stands
	// refused. It is started when the refusal is recorded, before the
	// supervisor can enter needs-authorization, so that no tick of the
	// clock between that and WaitCredential's first look is missed.
	poll *clock.Ticker
}

var (
	_ auth.OAuthHandler     = (*ExchangeHandler)(nil)
	_ conn.CredentialWaiter = (*ExchangeHandler)(nil)
)

// TokenSource implements auth.OAuthHandler: the caller's exchanged token.
// When the authorization server refuses the exchange (ErrExchangeRefused)
// it returns none, so that the request goes without Authorization and the
// upstream's 401 reaches Authorize, which says why: the supervisor then
// waits in needs-authorization rather than retrying an exchange that
// cannot succeed. Other errors (the authorization server unreachable)
// fail the request as an outage does.
func (h *ExchangeHandler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	refused, denied, deniedFor := h.refused, h.denied, h.deniedFor
	h.mu.Unlock()
	if denied != nil {
		if st, err := h.subjectToken(ctx); err != nil || st == deniedFor {
			return nil, nil // the same token: refused again, so not asked again
		}
	}
	tctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	var used string
	tok, err := h.e.Token(tctx, h.subject, func(ctx context.Context) (string, error) {
		st, err := h.subjectToken(ctx)
		used = st
		return st, err
	}, refused)
	if errors.Is(err, ErrExchangeRefused) {
		h.mu.Lock()
		h.denied, h.deniedFor = err, used
		if h.poll == nil {
			h.poll = h.e.cfg.Clock.Ticker(DefaultPollInterval)
		}
		h.mu.Unlock()
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.denied, h.deniedFor = nil, ""
	if h.poll != nil {
		h.poll.Stop()
		h.poll = nil
	}
	h.mu.Unlock()
	return oauth2.StaticTokenSource(tok), nil
}

// Authorize implements auth.OAuthHandler: on a 401 it sets the refused
// token aside, so that the retry carries a refreshed or newly exchanged
// one; after a refused exchange it returns a [*conn.SignInError] saying
// why and the fix. A 403 is returned as it is (the supervisor stops in
// auth-refused).
func (h *ExchangeHandler) Authorize(_ context.Context, req *http.Request, resp *http.Response) error {
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		return nil
	}
	tok, ok := cutBearer(req.Header.Get("Authorization"))
	h.mu.Lock()
	defer h.mu.Unlock()
	if ok {
		h.refused = tok
		return nil
	}
	if h.denied != nil {
		return &conn.SignInError{How: h.denied.Error() + "; or sign in to your identity provider again, then reconnect"}
	}
	return nil
}

// WaitCredential implements conn.CredentialWaiter: after a refused
// exchange it returns once the caller's own token is another than the
// one refused (checked every DefaultPollInterval on the Exchanger's
// clock), at once when no exchange was refused.
func (h *ExchangeHandler) WaitCredential(ctx context.Context) error {
	for {
		h.mu.Lock()
		denied, deniedFor, poll := h.denied, h.deniedFor, h.poll
		h.mu.Unlock()
		if denied == nil {
			return nil
		}
		if st, err := h.subjectToken(ctx); err == nil && st != deniedFor {
			return nil
		}
		select {
		case <-poll.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func cutBearer(v string) (string, bool) {
	if len(v) > 7 && (v[:7] == "Bearer " || v[:7] == "bearer ") {
		return v[7:], true
	}
	return "", false
}
