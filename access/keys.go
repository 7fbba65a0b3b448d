package access

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/go-jose/go-jose/v4"
)

// errUnknownKey is a token signed by a key the issuer's set lacks.
var errUnknownKey = errors.New("the token is signed by a key the issuer does not publish (kid)")

// Bounds of a metadata or key set fetch.
const (
	maxDocBytes  = 1 << 20
	fetchTimeout = 10 * time.Second
)

// keySet caches the issuer's JSON Web Key Set. A fetch happens at the
// first token, when the set is older than JWKSMaxAge, and when a token
// names an unknown key id, at most once per JWKSRefetchInterval. The lock
// is held during a fetch, so concurrent tokens wait for one fetch rather
// than each making their own.
type keySet struct {
	cfg *OAuth
	clk clock.Clock
	log *slog.Logger

	mu      sync.Mutex
	jwksURL string
	keys    []jose.JSONWebKey
	tried   time.Time // last fetch attempt
	fetched time.Time // last successful fetch
}

// key returns the public key for kid and alg.
func (s *keySet) key(ctx context.Context, kid, alg string) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clk.Now()
	k, found := s.find(kid, alg)
	stale := s.fetched.IsZero() || now.Sub(s.fetched) >= JWKSMaxAge
	if (!found || stale) && (s.tried.IsZero() || now.Sub(s.tried) >= JWKSRefetchInterval) {
		s.tried = now
		if err := s.fetch(ctx); err != nil {
			s.log.Warn("access: fetching the issuer's keys", "issuer", s.cfg.Issuer, "err", err)
			if !found {
				return nil, fmt.Errorf("%w: %v", ErrIssuerUnavailable, err)
			}
		} else {
			s.fetched = now
			k, found = s.find(kid, alg)
		}
	}
	if !found {
		if s.fetched.IsZero() {
			return nil, ErrIssuerUnavailable
		}
		return nil, errUnknownKey
	}
	return k, nil
}

// find looks kid up (a token without kid matches a set of one key).
func (s *keySet) find(kid, alg string) (any, bool) {
	var match []jose.JSONWebKey
	for _, k := range s.keys {
		if (k.Use != "" && k.Use != "sig") || (k.Algorithm != "" && k.Algorithm != alg) {
			continue
		}
		if kid == "" || k.KeyID == kid {
			match = append(match, k)
		}
	}
	if len(match) != 1 {
		return nil, false
	}
	return match[0].Key, true
}

// fetch reads the key set, discovering its URL first if need be.
func (s *keySet) fetch(ctx context.Context) error {
	if s.jwksURL == "" {
		s.jwksURL = s.cfg.JWKSURL
	}
	if s.jwksURL == "" {
		u, err := s.discover(ctx)
		if err != nil {
			return err
		}
		s.jwksURL = u
	}
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := s.get(ctx, s.jwksURL, &doc); err != nil {
		return err
	}
	var keys []jose.JSONWebKey
	for i, raw := range doc.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err != nil {
			s.log.Debug("access: skipping a key the key set has", "index", i, "err", err)
			continue
		}
		if !k.IsPublic() || !k.Valid() {
			continue // a symmetric or private key has no place in a public set
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return fmt.Errorf("key set %s has no usable public signing key", safeURL(s.jwksURL))
	}
	s.keys = keys
	return nil
}

// discover reads jwks_uri from the issuer's metadata: RFC 8414's
// /.well-known/oauth-authorization-server (inserted before the issuer's
// path), then OpenID Connect's /.well-known/openid-configuration
// (appended to it). The metadata's issuer must be the configured one.
func (s *keySet) discover(ctx context.Context) (string, error) {
	iss, err := url.Parse(s.cfg.Issuer)
	if err != nil {
		return "", err
	}
	path := strings.TrimSuffix(iss.EscapedPath(), "/")
	base := iss.Scheme + "://" + iss.Host
	var errs []error
	for _, u := range []string{base + "/.well-known/oauth-authorization-server" + path, base + path + "/.well-known/openid-configuration"} {
		var meta struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := s.get(ctx, u, &meta); err != nil {
			errs = append(errs, err)
			continue
		}
		if meta.Issuer != s.cfg.Issuer {
			errs = append(errs, fmt.Errorf("%s names issuer %q, not %q (RFC 8414 §3.3); set OAuth.Issuer to the issuer the server publishes", u, meta.Issuer, s.cfg.Issuer))
			continue
		}
		if err := checkURL("jwks_uri", meta.JWKSURI, true); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", u, err))
			continue
		}
		return meta.JWKSURI, nil
	}
	return "", fmt.Errorf("discovering the key set of %s: %w; or set OAuth.JWKSURL", s.cfg.Issuer, errors.Join(errs...))
}

// get fetches u and decodes its JSON body into v.
func (s *keySet) get(ctx context.Context, u string, v any) error {
	// Other tokens may wait for this fetch: the caller's cancellation does
	// not end it, a bound of its own does.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("GET %s: %w", safeURL(u), err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the URL, with its query
		}
		return fmt.Errorf("GET %s: %w", safeURL(u), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", safeURL(u), resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxDocBytes)).Decode(v); err != nil {
		return fmt.Errorf("GET %s: decoding: %w", safeURL(u), err)
	}
	return nil
}

// safeURL is u without user info or query, for messages.
func safeURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(an unparsable URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
