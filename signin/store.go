// Package signin signs mcpfsm in to remote MCP servers that need OAuth:
// it keeps their credentials at rest ([Store]: [FileStore], or
// [RedisStore] for several replicas, encrypted), authorizes
// a supervisor's requests with them ([Handler], a conn.HTTP.OAuthHandler
// that refreshes an expired token once and otherwise asks for a sign-in),
// and runs the sign-in a person starts ([Login]: go-sdk's authorization
// code flow with PKCE, a loopback redirect listener and the person's
// browser). On a gateway, an [Exchanger] trades each caller's own token
// for one of the upstream (RFC 8693 token exchange).
//
// Access tokens, refresh tokens, authorization codes, PKCE verifiers and
// client secrets are secrets by value: nothing in this package puts one
// in an error, a log record or a status.
package signin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"golang.org/x/oauth2"
)

// Key names one credential: whose it is (Subject, "" for the operator's
// own), which authorization server issued it (Issuer), for which
// protected resource (Resource, the server's MCP URL) and to which OAuth
// client (Client, its client ID).
type Key struct {
	Subject  string `json:"subject"`
	Issuer   string `json:"issuer"`
	Resource string `json:"resource"`
	Client   string `json:"client"`
}

// id is the key's file-system-safe name.
func (k Key) id() string {
	sum := sha256.Sum256([]byte(k.Subject + "\x00" + k.Issuer + "\x00" + k.Resource + "\x00" + k.Client))
	return hex.EncodeToString(sum[:16])
}

// Credential is what a sign-in left: the tokens and what refreshing them
// needs (the client's secret, if it has one, and the token endpoint).
type Credential struct {
	Key
	// Server is the config entry the credential was signed in for; it is
	// informational (auth status prints it).
	Server       string    `json:"server,omitempty"`
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	Scopes       []string  `json:"scopes,omitempty"`
	ClientSecret string    `json:"client_secret,omitempty"`
	TokenURL     string    `json:"token_url"`
	AuthStyle    int       `json:"auth_style,omitempty"` // oauth2.AuthStyle
	Saved        time.Time `json:"saved"`
}

// token is the credential's oauth2.Token.
func (c *Credential) token() *oauth2.Token {
	return &oauth2.Token{AccessToken: c.AccessToken, TokenType: c.TokenType, RefreshToken: c.RefreshToken, Expiry: c.Expiry}
}

// config is the oauth2 configuration that refreshes the credential.
func (c *Credential) config() *oauth2.Config {
	return &oauth2.Config{ClientID: c.Client, ClientSecret: c.ClientSecret, Scopes: c.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: c.TokenURL, AuthStyle: oauth2.AuthStyle(c.AuthStyle)}}
}

// fingerprint tells two credentials' access tokens apart without keeping
// a token in another field.
func (c *Credential) fingerprint() string {
	if c == nil {
		return ""
	}
	sum := sha256.Sum256([]byte(c.AccessToken))
	return hex.EncodeToString(sum[:8])
}

// Store keeps credentials at rest. Implementations are safe for
// concurrent use, by goroutines and by processes sharing them.
type Store interface {
	// Find returns the newest credential of subject for resource, or
	// nil and no error when there is none.
	Find(ctx context.Context, subject, resource string) (*Credential, error)
	// Save stores c under its Key, replacing what was stored there (a
	// rotated refresh token replaces the old one).
	Save(ctx context.Context, c *Credential) error
	// Delete removes every credential of subject for resource; it
	// reports how many there were.
	Delete(ctx context.Context, subject, resource string) (int, error)
	// List returns every stored credential.
	List(ctx context.Context) ([]*Credential, error)
	// Lock holds the refresh lock of the credential k until unlock is
	// called: one refresh in flight per credential, across goroutines
	// and processes; the others wait for it and then read its result.
	Lock(ctx context.Context, k Key) (unlock func(), err error)
}
