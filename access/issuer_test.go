package access

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
)

// issuer is an in-process OAuth authorization server: its metadata at
// the RFC 8414 path (or only the OpenID Connect one) and a JWKS of EC
// keys, and it signs tokens.
type issuer struct {
	t       *testing.T
	srv     *httptest.Server
	jwksGet atomic.Int32

	mu   sync.Mutex
	keys map[string]*ecdsa.PrivateKey // kid → key; all are published
}

func newIssuer(t *testing.T, oidcOnly bool) *issuer {
	t.Helper()
	is := &issuer{t: t, keys: map[string]*ecdsa.PrivateKey{}}
	is.addKey("k1")
	mux := http.NewServeMux()
	meta := func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{
			"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/jwks",
			"authorization_endpoint": is.srv.URL + "/authorize", "token_endpoint": is.srv.URL + "/token",
		})
	}
	if !oidcOnly {
		mux.HandleFunc("GET /.well-known/oauth-authorization-server", meta)
	}
	mux.HandleFunc("GET /.well-known/openid-configuration", meta)
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		is.jwksGet.Add(1)
		is.mu.Lock()
		defer is.mu.Unlock()
		var set jose.JSONWebKeySet
		for kid, k := range is.keys {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid, Algorithm: "ES256", Use: "sig"})
		}
		json.NewEncoder(w).Encode(set)
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (is *issuer) addKey(kid string) {
	k := newKey(is.t)
	is.mu.Lock()
	is.keys[kid] = k
	is.mu.Unlock()
}

// claims returns valid claims for aud at now.
func (is *issuer) claims(aud string, now time.Time) jwt.MapClaims {
	return jwt.MapClaims{
		"iss": is.srv.URL, "sub": "alice", "aud": aud, "scope": "mcp:tools other",
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
}

// sign signs c with the published key kid.
func (is *issuer) sign(kid string, c jwt.MapClaims) string {
	is.mu.Lock()
	k := is.keys[kid]
	is.mu.Unlock()
	if k == nil {
		is.t.Fatalf("no key %s", kid)
	}
	return signWith(is.t, kid, k, c)
}

func signWith(t *testing.T, kid string, k *ecdsa.PrivateKey, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
