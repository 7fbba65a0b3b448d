package signin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// Client is the OAuth client a sign-in uses, as the hosts' config keys
// give it (Claude Code's oauth.*, Gemini CLI's oauth block, Cursor's
// auth). With no ClientID, the client registers itself: by its client ID
// metadata document (ClientMetadataURL) where the authorization server
// supports one, or by dynamic registration.
type Client struct {
	ClientID     string
	ClientSecret string
	// Scopes replace the scopes discovered from the server's challenge
	// and metadata.
	Scopes []string
	// CallbackPort is the loopback redirect's port; zero picks a free
	// one (only with dynamic registration: a pre-registered client's
	// redirect URI is fixed).
	CallbackPort int
	// AuthServerMetadataURL replaces the discovery of the authorization
	// server's metadata.
	AuthServerMetadataURL string
	// AuthorizationURL and TokenURL, when both set, replace the
	// authorization server's metadata with these endpoints.
	AuthorizationURL, TokenURL string
	// ClientMetadataURL is the https URL of a client ID metadata
	// document describing mcpfsm as this user's client.
	ClientMetadataURL string
}

// LoginConfig configures [Login].
type LoginConfig struct {
	Server   string // the config entry's name, for messages
	Resource string // the server's MCP URL
	Subject  string // whose credential; "" for the operator's own
	Store    Store
	Client   Client
	// HTTPClient makes every request of the sign-in; nil means
	// http.DefaultClient.
	HTTPClient *http.Client
	// Open shows the authorization URL to the person signing in (see
	// [OpenBrowser]). It must not block until the sign-in ends.
	Open func(ctx context.Context, authURL string) error
	// ListenHost is the loopback address the redirect listener binds;
	// "" means 127.0.0.1.
	ListenHost string
	// Redirects and RedirectURL, when both set, receive the redirect in
	// place of a loopback listener of Login's own: a gateway's sign-ins
	// land on its own address (RedirectURL is where Redirects is
	// served). The flow's state is bound to Subject there.
	Redirects   *Redirects
	RedirectURL string
	// RedirectTTL bounds how long the redirect is awaited after the
	// authorization URL is shown; zero means until ctx ends.
	RedirectTTL time.Duration
}

// ErrCallbackPort is matched by the error of a sign-in whose callback
// port is taken.
var ErrCallbackPort = errors.New("callback port in use")

// Login signs in to the server at cfg.Resource: it connects as an MCP
// client with go-sdk's authorization code handler (protected resource
// metadata, authorization server metadata, client ID metadata document,
// pre-registered client or dynamic registration, PKCE S256, the resource
// parameter, the iss check, step-up), shows the authorization URL with
// cfg.Open, waits on a loopback listener for the redirect (a redirect
// whose state does not match is refused and the wait goes on), and saves
// the credential in cfg.Store. It returns the credential saved.
func Login(ctx context.Context, cfg LoginConfig) (*Credential, error) {
	hc := cfg.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	redirect, cb := cfg.RedirectURL, cfg.Redirects
	if cb == nil || redirect == "" {
		host := cfg.ListenHost
		if host == "" {
			host = "127.0.0.1"
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(cfg.Client.CallbackPort)))
		if err != nil {
			if cfg.Client.CallbackPort != 0 {
				return nil, fmt.Errorf("mcp server %q: %w: oauth.callbackPort %d: %v; stop what listens there, or register another port with the authorization server and set oauth.callbackPort to it",
					cfg.Server, ErrCallbackPort, cfg.Client.CallbackPort, err)
			}
			return nil, fmt.Errorf("mcp server %q: cannot listen for the sign-in's redirect on %s: %w", cfg.Server, host, err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		redirect = fmt.Sprintf("http://localhost:%d/callback", port)
		cb = NewRedirects(nil)
		mux := http.NewServeMux()
		mux.Handle("/callback", cb)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
	}

	rec := &discovery{next: hc.Transport, client: cfg.Client}
	if rec.next == nil {
		rec.next = http.DefaultTransport
	}
	client := *hc
	client.Transport = rec

	var (
		mu     sync.Mutex
		got    *Credential
		scopes []string
	)
	hcfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         redirect,
		Client:              &client,
		RequestRefreshToken: true,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			u, err := url.Parse(args.URL)
			if err != nil {
				return nil, err
			}
			q := u.Query()
			mu.Lock()
			scopes = strings.Fields(q.Get("scope"))
			mu.Unlock()
			wait, done := cb.expect(q.Get("state"), cfg.Subject, cfg.RedirectTTL)
			defer done()
			if err := cfg.Open(ctx, args.URL); err != nil {
				return nil, err
			}
			select {
			case r, ok := <-wait:
				if !ok {
					return nil, fmt.Errorf("mcp server %q: no sign-in arrived within %v: start it again", cfg.Server, cfg.RedirectTTL)
				}
				if r.err != nil {
					return nil, r.err
				}
				return r.res, nil
			case <-ctx.Done():
				return nil, fmt.Errorf("mcp server %q: no sign-in arrived: %w", cfg.Server, ctx.Err())
			}
		},
		NewTokenSource: func(ctx context.Context, oc *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			mu.Lock()
			got = &Credential{
				Key:         Key{Subject: cfg.Subject, Resource: cfg.Resource, Client: oc.ClientID},
				Server:      cfg.Server,
				AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry,
				Scopes: oc.Scopes, ClientSecret: oc.ClientSecret, TokenURL: oc.Endpoint.TokenURL, AuthStyle: int(oc.Endpoint.AuthStyle),
			}
			mu.Unlock()
			return oc.TokenSource(ctx, tok), nil
		},
	}
	if len(cfg.Client.Scopes) > 0 {
		want := cfg.Client.Scopes
		hcfg.ScopeFilter = func([]string) []string { return want }
	}
	if cfg.Client.ClientMetadataURL != "" {
		hcfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: cfg.Client.ClientMetadataURL}
	}
	if cfg.Client.ClientID != "" {
		pc := &oauthex.ClientCredentials{ClientID: cfg.Client.ClientID}
		if cfg.Client.ClientSecret != "" {
			pc.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: cfg.Client.ClientSecret}
		}
		hcfg.PreregisteredClient = pc
	} else {
		hcfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{redirect}, ClientName: "mcpfsm", TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		}}
	}
	h, err := auth.NewAuthorizationCodeHandler(hcfg)
	if err != nil {
		return nil, fmt.Errorf("mcp server %q: %w", cfg.Server, err)
	}
	mc := mcp.NewClient(&mcp.Implementation{Name: "mcpfsm-auth-login", Version: "1"}, nil)
	sess, err := mc.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: cfg.Resource, HTTPClient: &client, OAuthHandler: h}, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp server %q: sign-in failed: %w", cfg.Server, scrub(err))
	}
	// A tools/list may ask for more scope (step-up); the handler signs
	// in again for it.
	_, lerr := sess.ListTools(ctx, nil)
	_ = sess.Close()
	mu.Lock()
	c := got
	if c != nil && len(c.Scopes) == 0 {
		c.Scopes = scopes
	}
	mu.Unlock()
	if c == nil {
		if lerr != nil {
			return nil, fmt.Errorf("mcp server %q: sign-in failed: %w", cfg.Server, scrub(lerr))
		}
		return nil, fmt.Errorf("mcp server %q: the server did not ask for a sign-in: it needs none (or takes the config's headers)", cfg.Server)
	}
	c.Issuer = rec.issuerSeen()
	c.Saved = time.Now()
	if err := cfg.Store.Save(ctx, c); err != nil {
		return nil, err
	}
	return c, nil
}

// scrub keeps an error's text free of URL query values (an authorization
// URL's, a redirect's code).
func scrub(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(scrubText(err.Error()))
}

// scrubText replaces every URL query in s by "?REDACTED".
func scrubText(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "?")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i] + "?REDACTED")
		s = s[i+1:]
		j := strings.IndexAny(s, " \"'\n")
		if j < 0 {
			return b.String()
		}
		s = s[j:]
	}
}

// oneWord keeps an OAuth error code to its allowed characters.
func oneWord(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return -1
	}, s)
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

func page(msg string) string {
	return "<!doctype html><meta charset=utf-8><title>mcpfsm sign-in</title><p>" + msg + "</p>\n"
}

// discovery is the sign-in's round-tripper: it serves the configured
// authorization server metadata in place of the discovered one, and
// records the issuer of the metadata the handler used.
type discovery struct {
	next   http.RoundTripper
	client Client

	mu     sync.Mutex
	issuer string
}

func (d *discovery) issuerSeen() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.issuer
}

// asMetadataPath reports a request for authorization server metadata and
// the issuer it is for.
func asMetadataPath(u *url.URL) (issuer string, ok bool) {
	for _, p := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		if rest, found := strings.CutPrefix(u.Path, p); found && (rest == "" || strings.HasPrefix(rest, "/")) {
			return u.Scheme + "://" + u.Host + rest, true
		}
		if rest, found := strings.CutSuffix(u.Path, p); found {
			return u.Scheme + "://" + u.Host + rest, true
		}
	}
	return "", false
}

func (d *discovery) RoundTrip(req *http.Request) (*http.Response, error) {
	issuer, isMeta := asMetadataPath(req.URL)
	if !isMeta || req.Method != http.MethodGet {
		return d.next.RoundTrip(req)
	}
	c := d.client
	if c.AuthorizationURL != "" && c.TokenURL != "" {
		body, _ := json.Marshal(map[string]any{"issuer": issuer, "authorization_endpoint": c.AuthorizationURL,
			"token_endpoint": c.TokenURL, "response_types_supported": []string{"code"},
			"code_challenge_methods_supported": []string{"S256"}})
		d.record(body)
		return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(bytes.NewReader(body)), Request: req, ContentLength: int64(len(body))}, nil
	}
	if c.AuthServerMetadataURL != "" {
		u, err := url.Parse(c.AuthServerMetadataURL)
		if err != nil {
			return nil, err
		}
		r2 := req.Clone(req.Context())
		r2.URL, r2.Host = u, u.Host
		req = r2
	}
	resp, err := d.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	d.record(body)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

func (d *discovery) record(body []byte) {
	var m struct {
		Issuer string `json:"issuer"`
	}
	if json.Unmarshal(body, &m) == nil && m.Issuer != "" {
		d.mu.Lock()
		d.issuer = m.Issuer
		d.mu.Unlock()
	}
}
