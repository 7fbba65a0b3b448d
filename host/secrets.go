package host

import (
	"net/url"
	"strings"

	"github.com/mcpfsm/mcpfsm/config"
)

// AddSecrets registers the secret values of srv's configuration in s:
// every env and envFile value (as "NAME.env.KEY"), every header value
// and the credentials after its scheme ("NAME.header.Authorization"), the
// URL's user and password ("NAME.url.password") and query values
// ("NAME.url.query.KEY"), and an OAuth client secret
// ("NAME.oauth.clientSecret"). Values under 8 bytes are not kept (see
// internal/redact.MinSecretLen).
func AddSecrets(s Secrets, srv config.Server) {
	for _, kv := range srv.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			s.Add(srv.Name+".env."+k, v)
		}
	}
	for k, vs := range srv.Headers {
		for _, v := range vs {
			s.Add(srv.Name+".header."+k, v)
			if _, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
				s.Add(srv.Name+".header."+k, strings.TrimSpace(cred))
			}
		}
	}
	if srv.OAuth != nil && srv.OAuth.ClientSecret != "" {
		s.Add(srv.Name+"."+srv.OAuth.Key+".clientSecret", srv.OAuth.ClientSecret)
	}
	if x := srv.TokenExchange; x != nil && x.Secret != "" {
		s.Add(srv.Name+".upstreamAuth.tokenExchange.clientSecret", x.Secret)
	}
	u, err := url.Parse(srv.URL)
	if err != nil || srv.URL == "" {
		return
	}
	if u.User != nil {
		s.Add(srv.Name+".url.user", u.User.Username())
		if pw, ok := u.User.Password(); ok {
			s.Add(srv.Name+".url.password", pw)
		}
	}
	for k, vs := range u.Query() {
		for _, v := range vs {
			s.Add(srv.Name+".url.query."+k, v)
		}
	}
}
