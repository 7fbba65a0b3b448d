package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/mcpfsm/mcpfsm/access"
	"github.com/mcpfsm/mcpfsm/console"
	"github.com/mcpfsm/mcpfsm/internal/redact"
)

// secrets holds every secret value this process was configured with (the
// token, and each server's env, envFile, header and URL credentials, added
// by the host as it starts them): every text that leaves the process (the
// log, the console's answers, the trace, the audit trail, the MCP errors)
// passes through it.
var secrets = redact.NewSecrets()

// accessHelp documents the access flags, for run and serve.
const accessHelp = `
Access (both HTTP surfaces: -listen and -http): the token, from
-token-file FILE or $MCPFSM_TOKEN (make one with 'openssl rand -hex 32';
at least 16 bytes, not a repetition), is the operator's: every request
needs "Authorization: Bearer TOKEN", and any address may be served.
Without one, only loopback addresses are served (any other is refused at
start), and mcpfsm makes a token for the address (kept, mode 0600, in
$XDG_STATE_HOME/mcpfsm or ~/.local/state/mcpfsm, and named in the log),
since every local user can reach loopback; 'mcpfsm status' and
'reconnect' find it there. -listen unix:PATH serves a socket of mode
0600 instead, which needs no token; -unauthenticated serves loopback with
no credential at all (every local user can then run the tools).
With -oauth-issuer URL -oauth-audience AUD, -listen is an OAuth 2.1
resource server: JWT access tokens from that issuer are verified against
its published keys, and the Protected Resource Metadata is served at
/.well-known/oauth-protected-resource. Those tokens are the MCP users':
the console refuses them (403) unless -console-oauth-scope names the
scope an operator's token carries.
Cross-origin browser requests are refused unless -allow-origin lists the
origin (which then gets CORS); the Host header must be a loopback name
(on loopback), the bound address or an -allow-host name. Each surface
holds at most -max-conns connections (at most -max-conns-per-ip of one
address); past that a connection is answered 503 with Retry-After.
-tls-cert and -tls-key serve HTTPS.
`

// listFlag is a flag that may be given several times.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// accessFlags are the flags of the access rule of run's and serve's HTTP
// surfaces.
type accessFlags struct {
	fs                                        *flag.FlagSet // for -http and -max-sessions, the other flags build reads
	tokenFile, legacyToken                    *string
	allowOrigins, allowHosts, scopes          listFlag
	consoleScopes                             listFlag
	tlsCert, tlsKey                           *string
	oauthIssuer, oauthAudience, oauthResource *string
	oauthJWKS                                 *string
	maxConns, maxConnsPerIP                   *int
	unauthenticated                           *bool
}

func addAccessFlags(fs *flag.FlagSet, oauth bool) *accessFlags {
	a := &accessFlags{
		fs:          fs,
		tokenFile:   fs.String("token-file", "", "read the bearer token from `FILE` (mode 0600; default $"+access.EnvToken+")"),
		legacyToken: fs.String("http-token", "", "the bearer `TOKEN` on the command line (deprecated: other users see it in ps; use -token-file or $"+access.EnvToken+")"),
		tlsCert:     fs.String("tls-cert", "", "serve HTTPS with the certificate chain in `FILE` (PEM), with -tls-key"),
		tlsKey:      fs.String("tls-key", "", "the private key of -tls-cert, in `FILE` (PEM)"),
		maxConns: fs.Int("max-conns", access.DefaultMaxConns,
			"the most connections each HTTP surface holds open at once (`N`; with serve, at least twice -max-sessions, which it defaults to when larger)"),
		maxConnsPerIP: fs.Int("max-conns-per-ip", 0, "the most connections of one client address (`N`; 0: half of -max-conns; behind a proxy, raise it to -max-conns)"),
		unauthenticated: fs.Bool("unauthenticated", false,
			"serve loopback without any credential (no token is made): every local user can then call the tools and use the console"),
	}
	fs.Var(&a.allowOrigins, "allow-origin", "accept browser requests from `ORIGIN` (scheme://host[:port]); may be repeated")
	fs.Var(&a.allowHosts, "allow-host", "accept requests addressed to `HOST` (a DNS name clients use, or name:port); may be repeated")
	if oauth {
		a.oauthIssuer = fs.String("oauth-issuer", "", "accept OAuth 2.1 JWT access tokens of the issuer at `URL` on -listen")
		a.oauthAudience = fs.String("oauth-audience", "", "the audience `AUD` tokens must name (default: -oauth-resource)")
		a.oauthResource = fs.String("oauth-resource", "", "this server's resource `URL` in its metadata (default: the -listen endpoint's URL)")
		a.oauthJWKS = fs.String("oauth-jwks", "", "the issuer's key set `URL` (default: from the issuer's metadata)")
		fs.Var(&a.scopes, "oauth-scope", "require `SCOPE` of every token; may be repeated")
		fs.Var(&a.consoleScopes, "console-oauth-scope",
			"accept on the console (-http) the issuer's tokens with `SCOPE`, the operator's (default: none; the console refuses OAuth tokens); may be repeated")
	}
	return a
}

// callbackPath is where serve -oauth-issuer receives the redirects of
// its callers' sign-ins to the servers (upstreamAuth "per-caller"),
// outside the access rule: a browser's redirect carries no bearer token;
// the state it carries is what admits it (signin.Redirects).
const callbackPath = "/oauth/callback"

// surfaces are the access rules of the two HTTP surfaces, and their TLS.
type surfaces struct {
	mcp     *access.Rule // -listen: the users': the token or OAuth
	console *access.Rule // -http: the operator's: the token or its cookie, OAuth only with -console-oauth-scope
	tls     *tls.Config  // nil: plain HTTP
	// callback is where the sign-ins of OAuth callers to the servers
	// land: /oauth/callback at the origin of -oauth-resource; "" without
	// -oauth-issuer.
	callback string

	mu        sync.Mutex
	madeFiles []string // the token files of the token this run made
	made      string
}

// removeTokens removes the token files this run wrote, each only while
// it still holds this run's token: the token dies with the process.
func (s *surfaces) removeTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.madeFiles {
		if b, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(b)) == s.made {
			_ = os.Remove(f)
		}
	}
	s.madeFiles = nil
}

// listen opens serve's -listen listener under the MCP rule (none for
// ""), and the console's (-http) under its own, before any server starts:
// a bad address fails at once. On an error nothing is left open.
func (s *surfaces) listen(addr string, cf consoleFlags) (mcp, console net.Listener, err error) {
	if addr != "" {
		if mcp, err = s.mcp.Listen(addr); err != nil {
			return nil, nil, fmt.Errorf("-listen %s: %w", addr, err)
		}
	}
	if console, err = cf.listen(s.console); err != nil {
		if mcp != nil {
			mcp.Close()
		}
		return nil, nil, fmt.Errorf("-http: %w", err)
	}
	return mcp, console, nil
}

// flagValue is the value of the flag name of fs, "" if it has none.
func flagValue(fs *flag.FlagSet, name string) string {
	if f := fs.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// flagGiven reports whether the flag name was given.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// isTCP reports whether a -listen or -http address is a TCP one.
func isTCP(addr string) bool { return addr != "" && !strings.HasPrefix(addr, access.UnixPrefix) }

// maxConns is -max-conns, checked against serve's -max-sessions: a
// session holds its GET stream and a connection for each call in flight,
// so -max-conns is at least twice -max-sessions (its default rises to
// that).
func (a *accessFlags) maxConnsFor() (int, error) {
	n := *a.maxConns
	ms, err := strconv.Atoi(flagValue(a.fs, "max-sessions"))
	if err != nil || ms <= 0 || n < 0 {
		return n, nil
	}
	if !flagGiven(a.fs, "max-conns") {
		return max(n, 2*ms), nil
	}
	if n < 2*ms {
		return 0, fmt.Errorf("-max-conns %d: under twice -max-sessions %d, while every session holds its GET stream and a connection for each call in flight; set -max-conns %d or more, or fewer -max-sessions",
			n, ms, 2*ms)
	}
	return n, nil
}

// build makes the rules. listen is serve's -listen address ("" for run),
// for the default OAuth resource URL; -http is read from the flags.
func (a *accessFlags) build(listen string, logger *slog.Logger) (*surfaces, error) {
	token, err := access.LoadToken(*a.tokenFile, nil)
	if err != nil {
		return nil, err
	}
	if *a.legacyToken != "" {
		logger.Warn("-http-token puts the token on the command line, where every local user can read it (ps, /proc); use -token-file FILE or $" + access.EnvToken)
		token = *a.legacyToken
	}
	maxConns, err := a.maxConnsFor()
	if err != nil {
		return nil, err
	}
	httpAddr := flagValue(a.fs, "http")
	oauth := a.oauthIssuer != nil && *a.oauthIssuer != ""
	out := &surfaces{}
	if *a.tlsCert != "" || *a.tlsKey != "" {
		if out.tls, err = access.TLSConfig(*a.tlsCert, *a.tlsKey); err != nil {
			return nil, err
		}
	}
	base := access.Config{Token: token, AllowOrigins: a.allowOrigins, AllowHosts: a.allowHosts,
		MaxConns: maxConns, MaxConnsPerIP: *a.maxConnsPerIP}
	mcpCfg, consoleCfg := base, base
	secrets.Add("token", token)
	if token == "" && !*a.unauthenticated {
		// Every local user can reach a loopback port: a TCP surface
		// without a credential gets a token of this run, in a file only
		// this user can read. A unix socket is guarded by its mode.
		made := access.RunToken([]string{listen, httpAddr})
		secrets.Add("token", made)
		publish := func(addr net.Addr) error {
			f, err := access.WriteTokenFile(addr.String(), made)
			if err != nil {
				return fmt.Errorf("no token is configured and none could be kept for %s: %w; set $%s or -token-file FILE", addr, err, access.EnvToken)
			}
			out.mu.Lock()
			out.made, out.madeFiles = made, append(out.madeFiles, f)
			out.mu.Unlock()
			logger.Info(fmt.Sprintf("no token is configured: requests to %s need the token in %s (mode 0600), sent as \"Authorization: Bearer TOKEN\" (the console: open /?token=TOKEN once)", addr, f))
			return nil
		}
		if isTCP(listen) && !oauth {
			mcpCfg.Token, mcpCfg.Listened, mcpCfg.LoopbackOnly = made, publish, true
		}
		if isTCP(httpAddr) {
			consoleCfg.Token, consoleCfg.Listened, consoleCfg.LoopbackOnly = made, publish, true
		}
	}
	if oauth {
		resource := *a.oauthResource
		if _, port, _ := net.SplitHostPort(listen); resource == "" && (port == "0" || port == "") {
			return nil, fmt.Errorf("-oauth-resource: -oauth-issuer with -listen %q needs it; set -oauth-resource URL, the endpoint's URL as clients reach it, such as https://mcp.example.com/mcp", listen)
		}
		if resource == "" {
			scheme := "http"
			if out.tls != nil {
				scheme = "https"
			}
			host := listen
			if len(a.allowHosts) > 0 {
				_, port, _ := net.SplitHostPort(listen)
				host = net.JoinHostPort(a.allowHosts[0], port)
			}
			resource = scheme + "://" + host + "/mcp"
		}
		if u, err := url.Parse(resource); err == nil && u.Host != "" {
			out.callback = u.Scheme + "://" + u.Host + callbackPath
		}
		mcpCfg.OAuth = &access.OAuth{Issuer: *a.oauthIssuer, Audience: *a.oauthAudience, Scopes: a.scopes,
			JWKSURL: *a.oauthJWKS, ResourceURL: resource}
	} else if a.oauthAudience != nil && (*a.oauthAudience != "" || len(a.scopes) > 0 || len(a.consoleScopes) > 0) {
		return nil, fmt.Errorf("-oauth-audience, -oauth-scope and -console-oauth-scope: they need -oauth-issuer URL")
	}
	if out.mcp, err = access.New(mcpCfg); err != nil {
		return nil, err
	}
	if consoleCfg.Token != "" {
		consoleCfg.Cookie = console.CookieName
	}
	// The MCP users' tokens are no operator's: the console knows them only
	// to refuse them (403), unless -console-oauth-scope names the scope an
	// operator's token has.
	if mcpCfg.OAuth != nil && (consoleCfg.Token != "" || len(a.consoleScopes) > 0) {
		o := *mcpCfg.OAuth
		o.Scopes = a.consoleScopes
		o.Forbidden = len(a.consoleScopes) == 0
		consoleCfg.OAuth = &o
	}
	if out.console, err = access.New(consoleCfg); err != nil {
		return nil, err
	}
	return out, nil
}
