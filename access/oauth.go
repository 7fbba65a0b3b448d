package access

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// OAuth configures the rule as an OAuth 2.1 resource server (the MCP
// authorization spec): requests carry JWT access tokens issued by Issuer
// for Audience, verified against the issuer's JSON Web Key Set.
type OAuth struct {
	// Issuer is the authorization server's issuer identifier (an https
	// URL; http only on a loopback host). Tokens' "iss" must equal it.
	Issuer string
	// Audience is what tokens' "aud" (a string or an array) must contain;
	// "" means ResourceURL (RFC 8707 resource indicators).
	Audience string
	// Scopes are required of every token, in its "scope" claim (space
	// separated) or "scp" claim (an array); a token lacking one is
	// answered 403 insufficient_scope.
	Scopes []string
	// JWKSURL is the issuer's key set; "" means the jwks_uri of the
	// issuer's metadata, from /.well-known/oauth-authorization-server
	// (RFC 8414) or else /.well-known/openid-configuration.
	JWKSURL string
	// ResourceURL is this server's resource identifier (the MCP endpoint's
	// URL, e.g. https://mcp.example.com/mcp), published in the Protected
	// Resource Metadata.
	ResourceURL string
	// HTTPClient fetches the metadata and keys; nil means a client with a
	// 10 s timeout.
	HTTPClient *http.Client
	// Leeway is the clock skew allowed on "exp" and "nbf"; 0 means
	// DefaultLeeway.
	Leeway time.Duration
	// Forbidden refuses, with 403, every token that verifies: the surface
	// knows the issuer's tokens but grants their holders nothing. The
	// console without -console-oauth-scope is such a surface: an MCP
	// user's token is recognised there, and refused, since a user is not
	// the operator. No metadata is published then.
	Forbidden bool
}

// Limits of the OAuth verifier.
const (
	// DefaultLeeway is OAuth.Leeway's default.
	DefaultLeeway = 30 * time.Second
	// JWKSRefetchInterval is the least time between two fetches of the key
	// set: a token signed by an unknown key triggers a fetch at most this
	// often, so forged key ids cannot make the server hammer the issuer.
	JWKSRefetchInterval = time.Minute
	// JWKSMaxAge is how long a fetched key set is used before it is
	// fetched again at the next token.
	JWKSMaxAge = time.Hour
)

// ProtectedResourcePath is the well-known path of the Protected Resource
// Metadata (RFC 9728); a resource with a path also has the metadata at
// this path followed by its own (e.g. /.well-known/oauth-protected-resource/mcp).
const ProtectedResourcePath = "/.well-known/oauth-protected-resource"

// ErrIssuerUnavailable is wrapped by errors of fetching the issuer's
// metadata or keys; a request then gets 503.
var ErrIssuerUnavailable = errors.New("authorization server unavailable")

// verifier checks JWT access tokens for one OAuth config.
type verifier struct {
	cfg       OAuth
	clk       clock.Clock
	log       *slog.Logger
	parser    *jwt.Parser
	keys      *keySet
	metadata  http.Handler
	metaPaths []string
	metaURL   string // absolute, for WWW-Authenticate
}

// algorithms are the signing algorithms accepted: asymmetric only, so a
// public key can never be used as an HMAC secret.
var algorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

func newVerifier(o *OAuth, clk clock.Clock, log *slog.Logger) (*verifier, error) {
	cfg := *o
	if err := checkURL("OAuth.Issuer", cfg.Issuer, true); err != nil {
		return nil, err
	}
	if err := checkURL("OAuth.ResourceURL", cfg.ResourceURL, false); err != nil {
		return nil, err
	}
	if cfg.JWKSURL != "" {
		if err := checkURL("OAuth.JWKSURL", cfg.JWKSURL, true); err != nil {
			return nil, err
		}
	}
	if cfg.Audience == "" {
		cfg.Audience = cfg.ResourceURL
	}
	for _, s := range cfg.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\"\\") {
			return nil, fmt.Errorf("access: OAuth.Scopes: %q is not a scope token; give each scope without spaces or quotes", s)
		}
	}
	if cfg.Leeway <= 0 {
		cfg.Leeway = DefaultLeeway
	}
	cfg.HTTPClient = checkRedirects(cfg.HTTPClient)
	res, _ := url.Parse(cfg.ResourceURL)
	path := strings.TrimSuffix(res.EscapedPath(), "/")
	v := &verifier{
		cfg: cfg, clk: clk, log: log,
		parser: jwt.NewParser(
			jwt.WithValidMethods(algorithms), jwt.WithIssuer(cfg.Issuer), jwt.WithAudience(cfg.Audience),
			jwt.WithLeeway(cfg.Leeway), jwt.WithTimeFunc(clk.Now), jwt.WithExpirationRequired(),
		),
		keys: &keySet{cfg: &cfg, clk: clk, log: log},
		metadata: auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource:               cfg.ResourceURL,
			AuthorizationServers:   []string{cfg.Issuer},
			ScopesSupported:        cfg.Scopes,
			BearerMethodsSupported: []string{"header"},
		}),
		metaPaths: []string{ProtectedResourcePath},
		metaURL:   res.Scheme + "://" + res.Host + ProtectedResourcePath + path,
	}
	if path != "" {
		v.metaPaths = append(v.metaPaths, ProtectedResourcePath+path)
	}
	if cfg.Forbidden {
		v.metaPaths = nil
	}
	return v, nil
}

// maxRedirects bounds the redirects of one metadata or key set fetch.
const maxRedirects = 5

// checkRedirects returns a copy of c (nil: a client with a 10 s timeout)
// whose every redirect hop must pass the rule of the issuer's own URL
// (checkURL): a key set at https cannot be sent on to plain http, nor to
// a URL with user info or a query.
func checkRedirects(c *http.Client) *http.Client {
	var out http.Client
	if c != nil {
		out = *c
	} else {
		out.Timeout = 10 * time.Second
	}
	prev := out.CheckRedirect
	out.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		if err := checkURL("a redirect of the key set or metadata", req.URL.String(), true); err != nil {
			return err
		}
		if prev != nil {
			return prev(req, via)
		}
		return nil
	}
	return &out
}

// checkURL refuses anything but an absolute http(s) URL; with issuer, http
// is allowed on loopback hosts only (local tests and development).
func checkURL(field, s string, issuer bool) error {
	u, err := url.Parse(s)
	switch {
	case s == "":
		return fmt.Errorf("access: %s is required", field)
	case err != nil:
		return fmt.Errorf("access: %s %q: %w", field, s, err)
	case u.Scheme != "https" && u.Scheme != "http", u.Host == "":
		return fmt.Errorf("access: %s %q is not an absolute http(s) URL; use e.g. https://auth.example.com", field, s)
	case u.User != nil || u.Fragment != "" || (issuer && u.RawQuery != ""):
		return fmt.Errorf("access: %s %q: no user info, query or fragment allowed", field, u.Redacted())
	case issuer && u.Scheme == "http" && !loopbackName(u.Hostname()):
		return fmt.Errorf("access: %s %q: http is allowed only on a loopback host; use https", field, s)
	}
	return nil
}

// isMetadataPath reports whether p is one of the metadata's paths.
func (v *verifier) isMetadataPath(p string) bool { return slices.Contains(v.metaPaths, p) }

// challenge sets the WWW-Authenticate header of a refusal; errParam is ""
// or an RFC 6750 error code.
func (v *verifier) challenge(w http.ResponseWriter, errParam string) {
	params := []string{fmt.Sprintf("resource_metadata=%q", v.metaURL)}
	if len(v.cfg.Scopes) > 0 {
		params = append(params, fmt.Sprintf("scope=%q", strings.Join(v.cfg.Scopes, " ")))
	}
	if errParam != "" {
		params = append([]string{fmt.Sprintf("error=%q", errParam)}, params...)
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
}

type tokenInfoKey struct{}

// serve verifies tok and passes the request on to next, or refuses it.
func (v *verifier) serve(w http.ResponseWriter, req *http.Request, tok string, next http.Handler,
	refuse func(http.ResponseWriter, *http.Request, int, string)) {
	info, err := v.verify(req.Context(), tok)
	var missing *missingScopeError
	switch {
	case errors.Is(err, ErrIssuerUnavailable):
		v.log.Warn("access: cannot verify a token", "issuer", v.cfg.Issuer, "err", err)
		refuse(w, req, http.StatusServiceUnavailable, "cannot verify the token now: the authorization server "+v.cfg.Issuer+" is unavailable; try again later")
	case errors.As(err, &missing):
		v.challenge(w, "insufficient_scope")
		refuse(w, req, http.StatusForbidden, fmt.Sprintf("insufficient scope: the token lacks %q; ask the authorization server for scope %q",
			missing.scope, strings.Join(v.cfg.Scopes, " ")))
	case err != nil:
		v.challenge(w, "invalid_token")
		refuse(w, req, http.StatusUnauthorized, "invalid token: "+err.Error()+"; get a new access token from "+v.cfg.Issuer)
	case v.cfg.Forbidden:
		refuse(w, req, http.StatusForbidden, "an access token of "+v.cfg.Issuer+" is not accepted here: this surface is the operator's; "+
			"send the operator's token (-token-file), or start mcpfsm with -console-oauth-scope SCOPE and use a token with that scope")
	default:
		ctx := context.WithValue(req.Context(), subjectKey{}, info.UserID)
		next.ServeHTTP(w, req.WithContext(context.WithValue(ctx, tokenInfoKey{}, info)))
	}
}

// withTokenInfo puts the verified token's auth.TokenInfo where go-sdk's
// StreamableHTTPHandler looks for it (auth.TokenInfoFromContext), so that
// an MCP session stays bound to the user who opened it. Only
// auth.RequireBearerToken can store it; its verifier here returns what
// serve has already verified.
func (v *verifier) withTokenInfo(h http.Handler) http.Handler {
	return auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		info, ok := ctx.Value(tokenInfoKey{}).(*auth.TokenInfo)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return info, nil
	}, &auth.RequireBearerTokenOptions{ClockSkew: v.cfg.Leeway})(h)
}

type missingScopeError struct{ scope string }

func (e *missingScopeError) Error() string { return "missing scope " + e.scope }

// Subject prefixes of OAuth tokens (see [Subject]): each kind of subject
// has its own namespace, so that no token can pass for another kind.
const (
	SubjectOAuthSub    = "oauth:sub:"
	SubjectOAuthClient = "oauth:client:"
)

// accessTokenTypes are the JOSE "typ" values accepted where a token has
// one (RFC 9068 §2.1: at+jwt; plain JWT, which many issuers send),
// compared case-insensitively, with or without "application/".
var accessTokenTypes = []string{"at+jwt", "jwt"}

// claims are the access token's claims read here.
type claims struct {
	jwt.RegisteredClaims
	Scope    any    `json:"scope"` // "a b" (RFC 9068, RFC 8693)
	Scp      any    `json:"scp"`   // ["a", "b"] (Azure AD, Okta)
	ClientID string `json:"client_id"`
}

// verify checks tok's signature and claims and returns its TokenInfo. Its
// errors are fixed texts: nothing of the token is in them.
func (v *verifier) verify(ctx context.Context, tok string) (*auth.TokenInfo, error) {
	var c claims
	_, err := v.parser.ParseWithClaims(tok, &c, func(t *jwt.Token) (any, error) {
		if typ, ok := t.Header["typ"]; ok {
			s, _ := typ.(string)
			if !slices.Contains(accessTokenTypes, strings.TrimPrefix(strings.ToLower(s), "application/")) {
				return nil, errTokenType
			}
		}
		kid, _ := t.Header["kid"].(string)
		return v.keys.key(ctx, kid, t.Method.Alg())
	})
	if errors.Is(err, jwt.ErrTokenRequiredClaimMissing) && len(c.Audience) == 0 {
		return nil, errors.New("the token lacks aud: ask the authorization server for a token for this resource (RFC 8707 resource=" + v.cfg.Audience + ")")
	}
	if err != nil {
		return nil, tokenError(err)
	}
	scopes := append(scopeList(c.Scope), scopeList(c.Scp)...)
	for _, s := range v.cfg.Scopes {
		if !slices.Contains(scopes, s) {
			return nil, &missingScopeError{scope: s}
		}
	}
	info := &auth.TokenInfo{Scopes: scopes}
	switch {
	case c.Subject != "":
		info.UserID = SubjectOAuthSub + c.Subject
	case c.ClientID != "":
		info.UserID = SubjectOAuthClient + c.ClientID
	default:
		return nil, errNoSubject
	}
	if c.ExpiresAt != nil {
		info.Expiration = c.ExpiresAt.Time
	}
	return info, nil
}

var (
	errTokenType = errors.New("the token's type (typ) is not an access token's (at+jwt or JWT)")
	errNoSubject = errors.New("the token names neither a subject (sub) nor a client (client_id), so no session can be bound to it")
)

// tokenError maps a jwt error to a fixed text.
func tokenError(err error) error {
	for _, e := range []struct {
		target error
		text   string
	}{
		{ErrIssuerUnavailable, ""},
		{errUnknownKey, ""},
		{errTokenType, ""},
		{jwt.ErrTokenExpired, "the token has expired"},
		{jwt.ErrTokenNotValidYet, "the token is not valid yet"},
		{jwt.ErrTokenInvalidAudience, "the token is not for this server (aud)"},
		{jwt.ErrTokenInvalidIssuer, "the token is from another issuer (iss)"},
		{jwt.ErrTokenRequiredClaimMissing, "the token lacks a required claim (exp)"},
		{jwt.ErrTokenSignatureInvalid, "the token's signature does not verify"},
		{jwt.ErrTokenMalformed, "the token is not a JWT"},
	} {
		if errors.Is(err, e.target) {
			if e.text == "" {
				return e.target
			}
			return errors.New(e.text)
		}
	}
	return errors.New("the token cannot be verified")
}

// scopeList reads a "scope" string or an "scp" array (or string).
func scopeList(v any) []string {
	switch v := v.(type) {
	case string:
		return strings.Fields(v)
	case []any:
		var out []string
		for _, s := range v {
			if s, ok := s.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
