package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// jwtClientCredentials is an auth.OAuthHandler for the client credentials
// grant with private_key_jwt client authentication (RFC 7523 section 2.2),
// which go-sdk v1.8.0 lacks: the client proves itself with a short-lived
// JWT signed by its private key instead of a shared secret.
type jwtClientCredentials struct {
	clientID string
	key      any    // the parsed private key
	method   string // the JWT signing method, such as ES256

	mu sync.Mutex
	ts oauth2.TokenSource
}

func newJWTClientCredentials(clientID, pemKey, alg string) (*jwtClientCredentials, error) {
	if alg == "" {
		alg = "ES256"
	}
	m := jwt.GetSigningMethod(alg)
	if m == nil {
		return nil, fmt.Errorf("signing algorithm %q is not supported", alg)
	}
	var key any
	var err error
	switch {
	case strings.HasPrefix(alg, "ES"):
		key, err = jwt.ParseECPrivateKeyFromPEM([]byte(pemKey))
	case strings.HasPrefix(alg, "RS"), strings.HasPrefix(alg, "PS"):
		key, err = jwt.ParseRSAPrivateKeyFromPEM([]byte(pemKey))
	default:
		err = fmt.Errorf("no key parser for %s", alg)
	}
	if err != nil {
		return nil, fmt.Errorf("private key: %w", err)
	}
	return &jwtClientCredentials{clientID: clientID, key: key, method: alg}, nil
}

// TokenSource implements auth.OAuthHandler.
func (h *jwtClientCredentials) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ts, nil
}

// Authorize implements auth.OAuthHandler: discover the authorization
// server from the refusal, then get a token with a signed assertion.
func (h *jwtClientCredentials) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	defer io.Copy(io.Discard, resp.Body)
	challenges, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return fmt.Errorf("WWW-Authenticate: %w", err)
	}
	prm, err := protectedResource(ctx, challenges, req.URL)
	if err != nil {
		return err
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], http.DefaultClient)
	if err != nil {
		return fmt.Errorf("authorization server metadata: %w", err)
	}
	if asm == nil {
		return errors.New("the authorization server publishes no metadata")
	}
	assertion, err := h.assertion(asm.Issuer)
	if err != nil {
		return err
	}
	cfg := &clientcredentials.Config{
		ClientID:  h.clientID,
		TokenURL:  asm.TokenEndpoint,
		Scopes:    prm.ScopesSupported,
		AuthStyle: oauth2.AuthStyleInParams,
		EndpointParams: url.Values{
			"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
			"client_assertion":      {assertion},
		},
	}
	tok, err := cfg.Token(ctx)
	if err != nil {
		return fmt.Errorf("token request: %w", err)
	}
	h.mu.Lock()
	h.ts = oauth2.StaticTokenSource(tok)
	h.mu.Unlock()
	return nil
}

// assertion is the client's signed proof of identity for the audience.
func (h *jwtClientCredentials) assertion(audience string) (string, error) {
	var jti [16]byte
	if _, err := rand.Read(jti[:]); err != nil {
		return "", err
	}
	now := time.Now()
	claims := jwt.RegisteredClaims{
		Issuer:    h.clientID,
		Subject:   h.clientID,
		Audience:  jwt.ClaimStrings{audience},
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(5 * time.Minute)),
		ID:        hex.EncodeToString(jti[:]),
	}
	return jwt.NewWithClaims(jwt.GetSigningMethod(h.method), claims).SignedString(h.key)
}

// protectedResource finds the protected resource metadata: where the
// challenge says, else at the well-known path of the endpoint, else at the
// root.
func protectedResource(ctx context.Context, challenges []oauthex.Challenge, endpoint *url.URL) (*oauthex.ProtectedResourceMetadata, error) {
	var candidates []string
	for _, c := range challenges {
		if u := c.Params["resource_metadata"]; u != "" {
			candidates = append(candidates, u)
		}
	}
	wk := *endpoint
	wk.RawQuery = ""
	wk.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(endpoint.Path, "/")
	candidates = append(candidates, wk.String())
	wk.Path = "/.well-known/oauth-protected-resource"
	candidates = append(candidates, wk.String())
	for _, u := range candidates {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, u, endpoint.String(), http.DefaultClient)
		if err == nil && prm != nil && len(prm.AuthorizationServers) > 0 {
			return prm, nil
		}
	}
	return nil, fmt.Errorf("no protected resource metadata for %s", endpoint)
}
