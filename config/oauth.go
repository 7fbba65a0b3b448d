package config

import (
	"net"
	"net/url"
	"strings"

	"github.com/mcpfsm/mcpfsm/internal/tree"
)

// OAuth is how mcpfsm signs in to an http server that needs OAuth, as
// the hosts' keys say it: Claude Code's "oauth" (clientId, callbackPort,
// authServerMetadataUrl, scopes as one space-separated string), Gemini
// CLI's "oauth" block (enabled, clientId, clientSecret, authorizationUrl,
// tokenUrl, scopes as an array) and Cursor's "auth" (CLIENT_ID,
// CLIENT_SECRET, scopes). Strings may use ${VAR}. A server without any
// is signed in to with dynamic client registration when it asks for it.
type OAuth struct {
	// Key is the key it was read from ("oauth" or "auth"), for messages.
	Key string
	// Disabled is Gemini CLI's "enabled": false: never sign in.
	Disabled bool
	// ClientID and ClientSecret are a pre-registered client's; the
	// secret is a secret by value.
	ClientID, ClientSecret string
	// CallbackPort is the loopback redirect's port; zero picks a free one.
	CallbackPort int
	// AuthServerMetadataURL replaces the discovery of the authorization
	// server's metadata (https, or http on loopback).
	AuthServerMetadataURL string
	// AuthorizationURL and TokenURL replace the authorization server's
	// metadata with these endpoints (Gemini CLI).
	AuthorizationURL, TokenURL string
	// Scopes replace the scopes the server asks for.
	Scopes []string
	// ClientMetadataURL is mcpfsm's own key clientMetadataUrl: the https
	// URL of a client ID metadata document describing mcpfsm as this
	// user's client, used where the authorization server supports them.
	ClientMetadataURL string
}

// geminiIgnoredOAuth are keys of Gemini CLI's oauth block that mcpfsm
// does not use.
var geminiIgnoredOAuth = map[string]bool{"redirectUri": true, "tokenParamName": true, "audiences": true}

// oauthKey reads Claude Code's and Gemini CLI's "oauth" object.
func oauthKey(p *parser, e *entry, m member, path string) {
	members, ok := p.object(m.Value, path)
	if !ok {
		return
	}
	o := oauthOf(e, "oauth")
	for _, f := range members {
		fpath := pathKey(path, f.Key)
		if f.Value.Kind == tree.Null {
			continue
		}
		switch f.Key {
		case "enabled":
			o.Disabled = !p.boolean(f.Value, fpath)
		case "clientId":
			o.ClientID = p.nonEmptyString(f.Value, fpath, "the client ID the authorization server registered")
		case "clientSecret":
			o.ClientSecret = p.nonEmptyString(f.Value, fpath, `the client's secret, as "${VAR}" from the environment`)
		case "callbackPort":
			o.CallbackPort = p.whole(f.Value, fpath, "a TCP port number", 65535, "give the port of the redirect URI registered for the client (http://localhost:PORT/callback)")
		case "authServerMetadataUrl":
			o.AuthServerMetadataURL = p.oauthURL(f.Value, fpath)
		case "authorizationUrl":
			o.AuthorizationURL = p.oauthURL(f.Value, fpath)
		case "tokenUrl":
			o.TokenURL = p.oauthURL(f.Value, fpath)
		case "scopes":
			o.Scopes = p.scopes(f.Value, fpath)
		case "clientMetadataUrl":
			o.ClientMetadataURL = p.clientMetadataURL(f.Value, fpath)
		default:
			if geminiIgnoredOAuth[f.Key] {
				p.warnf("%s is ignored: mcpfsm does not use it (a key of Gemini CLI)", fpath)
				continue
			}
			p.addf("%s is not an oauth option: give clientId, clientSecret, callbackPort, authServerMetadataUrl, scopes, enabled, authorizationUrl, tokenUrl or clientMetadataUrl", fpath)
		}
	}
	if (o.AuthorizationURL == "") != (o.TokenURL == "") {
		p.addf("%s: give both authorizationUrl and tokenUrl, or neither (then they are discovered)", path)
	}
}

// cursorAuth reads Cursor's "auth" object.
func cursorAuth(p *parser, e *entry, m member, path string) {
	members, ok := p.object(m.Value, path)
	if !ok {
		return
	}
	o := oauthOf(e, "auth")
	for _, f := range members {
		fpath := pathKey(path, f.Key)
		if f.Value.Kind == tree.Null {
			continue
		}
		switch f.Key {
		case "CLIENT_ID":
			o.ClientID = p.nonEmptyString(f.Value, fpath, "the client ID the authorization server registered")
		case "CLIENT_SECRET":
			o.ClientSecret = p.nonEmptyString(f.Value, fpath, `the client's secret, as "${VAR}" from the environment`)
		case "scopes":
			o.Scopes = p.scopes(f.Value, fpath)
		default:
			p.addf("%s is not an auth option: give CLIENT_ID, CLIENT_SECRET or scopes", fpath)
		}
	}
}

// oauthOf returns the entry's OAuth, made from key when there is none.
func oauthOf(e *entry, key string) *OAuth {
	if e.s.OAuth == nil {
		e.s.OAuth = &OAuth{Key: key}
	}
	return e.s.OAuth
}

// scopes reads scopes as one space-separated string (Claude Code) or an
// array of strings (Gemini CLI, Cursor).
func (p *parser) scopes(v tree.Value, path string) []string {
	switch v.Kind {
	case tree.String:
		s, _ := p.text(v, path)
		return strings.Fields(s)
	case tree.Array:
		var out []string
		for _, s := range p.stringArray(v, path) {
			if s = strings.TrimSpace(s); s == "" || strings.ContainsAny(s, " \t") {
				p.addf("%s: each scope must be one word, not %q", path, s)
				continue
			}
			out = append(out, s)
		}
		return out
	}
	p.addf(`%s must be a space-separated string of scopes such as "read write", or an array of them, not %s`, path, v.Kind.Article())
	return nil
}

// oauthURL reads an authorization server's URL: https, or http on a
// loopback host (a local test server).
func (p *parser) oauthURL(v tree.Value, path string) string {
	s, ok := p.text(v, path)
	if !ok {
		return ""
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "":
		p.addf("%s must be an https:// URL such as https://auth.example.com/.well-known/oauth-authorization-server", path)
	case u.Scheme == "https":
	case u.Scheme == "http" && loopbackHost(u.Hostname()):
	case u.Scheme == "http":
		p.addf("%s must use https: %q is plain http to %s, which is not this machine; give its https:// URL (plain http is allowed only for localhost)", path, u.Scheme+"://"+u.Host+u.Path, u.Hostname())
	default:
		p.addf("%s must be an https:// URL, not a %s: URL", path, u.Scheme)
	}
	return s
}

// clientMetadataURL reads the URL of a client ID metadata document: an
// https URL with a path, which is the client's ID.
func (p *parser) clientMetadataURL(v tree.Value, path string) string {
	s, ok := p.text(v, path)
	if !ok {
		return ""
	}
	if u, err := url.Parse(s); err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" {
		p.addf("%s must be the https:// URL, with a path, where you publish mcpfsm's client ID metadata document, such as https://example.com/mcpfsm-client.json", path)
	}
	return s
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// The values of upstreamAuth: whose credential an http server's requests
// carry on a gateway whose callers sign in with OAuth (serve
// -oauth-issuer). UpstreamAuthShared: every caller reaches the server
// with the one credential the operator signed in with.
// UpstreamAuthPerCaller: each caller with its own (the default there).
const (
	UpstreamAuthShared    = "shared"
	UpstreamAuthPerCaller = "per-caller"
)

// upstreamAuth reads mcpfsm's key upstreamAuth: whose credential an http
// server's requests carry on a gateway. "shared" and "per-caller" are
// supported; {"tokenExchange": {...}} is refused with what to give
// instead, so that no config believes its callers reach the server by
// their own token while they do not.
func upstreamAuth(p *parser, e *entry, m member, path string) {
	switch m.Value.Kind {
	case tree.String:
		v, _ := p.text(m.Value, path)
		switch v {
		case UpstreamAuthShared, UpstreamAuthPerCaller:
			e.s.UpstreamAuth = v
		default:
			p.addf(`%s must be "per-caller" (each OAuth caller of serve signs in as itself) or "shared" (the operator's one credential for every caller), not %q`, path, v)
		}
	case tree.Object:
		members, _ := p.object(m.Value, path)
		for _, f := range members {
			fpath := pathKey(path, f.Key)
			if f.Key != "tokenExchange" {
				p.addf(`%s is not an upstreamAuth option: the object form takes tokenExchange only`, fpath)
				continue
			}
			if x, ok := p.tokenExchange(f.Value, fpath); ok {
				e.s.TokenExchange = x
			}
		}
	default:
		p.addf(`%s must be "per-caller", "shared" or an object {"tokenExchange": {...}}, not %s`, path, m.Value.Kind.Article())
	}
}

// TokenExchange is mcpfsm's key upstreamAuth.tokenExchange: serve with
// OAuth callers trades each caller's own access token for one of the
// server's (RFC 8693) at the server's authorization server, which trusts
// the callers' identity provider.
type TokenExchange struct {
	TokenURL string   // tokenUrl: the authorization server's token endpoint
	Issuer   string   // issuer: that authorization server's issuer
	Audience string   // audience: the exchange's audience; "" means Issuer
	ClientID string   // clientId: serve's client there
	Secret   string   // clientSecret: its secret, as "${VAR}"; "" for a public client
	Scopes   []string // scopes asked for
}

// tokenExchange reads upstreamAuth.tokenExchange.
func (p *parser) tokenExchange(v tree.Value, path string) (*TokenExchange, bool) {
	members, ok := p.object(v, path)
	if !ok {
		return nil, false
	}
	x := &TokenExchange{}
	for _, f := range members {
		fpath := pathKey(path, f.Key)
		switch f.Key {
		case "tokenUrl":
			x.TokenURL = p.oauthURL(f.Value, fpath)
		case "issuer":
			x.Issuer = p.oauthURL(f.Value, fpath)
		case "audience":
			x.Audience = p.nonEmptyString(f.Value, fpath, "the audience the authorization server expects")
		case "clientId":
			x.ClientID = p.nonEmptyString(f.Value, fpath, "serve's client ID at the server's authorization server")
		case "clientSecret":
			x.Secret = p.nonEmptyString(f.Value, fpath, `the client's secret, as "${VAR}" from the environment`)
		case "scopes":
			x.Scopes = p.scopes(f.Value, fpath)
		default:
			p.addf("%s is not a tokenExchange option: give tokenUrl, issuer, audience, clientId, clientSecret or scopes", fpath)
		}
	}
	if x.TokenURL == "" || x.ClientID == "" {
		p.addf(`%s needs "tokenUrl" (the server's authorization server's token endpoint) and "clientId" (serve's client there)`, path)
		return nil, false
	}
	return x, true
}
