package access

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/benbjohnson/clock"
)

// Config is the access rule of one HTTP surface. The zero value serves
// loopback only, without authentication.
type Config struct {
	// Token is the static bearer token ([LoadToken]); "" for none. It must
	// pass [CheckToken].
	Token string
	// OAuth, when set, accepts JWT access tokens from an OAuth 2.1
	// authorization server, beside Token if both are set.
	OAuth *OAuth
	// AllowOrigins are the browser origins (scheme://host[:port]) accepted
	// beside the request's own (flag -allow-origin).
	AllowOrigins []string
	// AllowHosts are the Host names (optionally name:port) accepted beside
	// loopback names and the connection's own address (flag -allow-host):
	// the DNS names clients use to reach the server.
	AllowHosts []string
	// Cookie is the name of a cookie accepted like the bearer token, and
	// set by a GET carrying ?token=TOKEN (the console's browser login);
	// "" accepts no cookie. It needs Token.
	Cookie string
	// MaxConns bounds the connections open at once on a listener made by
	// [Rule.Listen]; 0 means DefaultMaxConns, a negative value no bound.
	// Past it a connection is answered 503 with Retry-After ([NewServer]).
	MaxConns int
	// MaxConnsPerIP bounds the connections of one client address within
	// MaxConns; 0 means half of MaxConns, a negative value MaxConns. Behind
	// a reverse proxy every client has the proxy's address: raise it.
	MaxConnsPerIP int
	// LoopbackOnly makes [Rule.Listen] serve loopback addresses only,
	// even with a Token: one the host made itself, since none was
	// configured, guards against the other local users, not the network.
	LoopbackOnly bool
	// Listened, when set, is called by [Rule.Listen] with the address
	// bound (the port chosen, for port 0) before it returns; an error
	// closes the listener and is returned. mcpfsm writes the token file
	// of that address then ([WriteTokenFile]).
	Listened func(net.Addr) error
	// Clock is used for token times and the JWKS refetch limit; nil means
	// the real clock.
	Clock clock.Clock
	// Logger receives refusals (at debug level) and JWKS fetch failures;
	// nil discards them.
	Logger *slog.Logger
}

// DefaultMaxConns is the connection bound of [Rule.Listen] when
// Config.MaxConns is 0.
const DefaultMaxConns = 512

// Rule is a validated Config; see the package doc for what it decides.
// It is safe for concurrent use.
type Rule struct {
	cfg     Config
	clk     clock.Clock
	log     *slog.Logger
	origins map[string]bool // normalised scheme://host[:port]
	hosts   []allowedHost
	oauth   *verifier // nil without OAuth
	cop     *http.CrossOriginProtection
}

type allowedHost struct{ name, port string } // port "" matches any

// New validates cfg and returns its rule. It makes no network request:
// an OAuth issuer's metadata and keys are fetched at the first token.
func New(cfg Config) (*Rule, error) {
	r := &Rule{cfg: cfg, clk: cfg.Clock, log: cfg.Logger, origins: map[string]bool{}, cop: http.NewCrossOriginProtection()}
	if r.clk == nil {
		r.clk = clock.New()
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Token != "" {
		if err := CheckToken(cfg.Token); err != nil {
			return nil, err
		}
	}
	if cfg.Cookie != "" && cfg.Token == "" {
		return nil, fmt.Errorf("access: Config.Cookie %q needs Config.Token: the cookie carries the static token", cfg.Cookie)
	}
	for _, o := range cfg.AllowOrigins {
		n, err := normalOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("access: -allow-origin %q: %w; use scheme://host[:port], e.g. https://app.example.com", o, err)
		}
		r.origins[n] = true
	}
	for _, h := range cfg.AllowHosts {
		ah, err := parseAllowedHost(h)
		if err != nil {
			return nil, fmt.Errorf("access: -allow-host %q: %w; use a host name or name:port, e.g. mcp.example.com", h, err)
		}
		r.hosts = append(r.hosts, ah)
	}
	if cfg.OAuth != nil {
		v, err := newVerifier(cfg.OAuth, r.clk, r.log)
		if err != nil {
			return nil, err
		}
		r.oauth = v
	}
	return r, nil
}

// Authenticated reports whether the rule asks for a credential (a Token or
// OAuth is set); without one it serves loopback only.
func (r *Rule) Authenticated() bool { return r.cfg.Token != "" || r.oauth != nil }

// normalOrigin returns o as lower-case scheme://host[:port], without a
// default port, or an error if o is not of that form.
func normalOrigin(o string) (string, error) {
	u, err := url.Parse(o)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("scheme %q is not http or https", u.Scheme)
	}
	if u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("not an origin (scheme://host[:port] with nothing after)")
	}
	return originOf(u.Scheme, u.Host), nil
}

// originOf is the normal form of scheme://hostport.
func originOf(scheme, hostport string) string {
	scheme, hostport = strings.ToLower(scheme), strings.ToLower(hostport)
	if h, p, err := net.SplitHostPort(hostport); err == nil &&
		((scheme == "http" && p == "80") || (scheme == "https" && p == "443")) {
		hostport = h
		if strings.Contains(h, ":") {
			hostport = "[" + h + "]"
		}
	}
	return scheme + "://" + hostport
}

func parseAllowedHost(s string) (allowedHost, error) {
	if s == "" || strings.ContainsAny(s, "/@?# ") {
		return allowedHost{}, fmt.Errorf("not a host name")
	}
	s = strings.ToLower(s)
	if h, p, err := net.SplitHostPort(s); err == nil {
		return allowedHost{name: h, port: p}, nil
	}
	return allowedHost{name: strings.Trim(s, "[]")}, nil
}
