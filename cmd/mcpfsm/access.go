package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strings"

	"github.com/mcpfsm/mcpfsm/access"
	"github.com/mcpfsm/mcpfsm/console"
)

// accessHelp documents the access flags, for run and serve.
const accessHelp = `
Access (both HTTP surfaces: -listen and -http): with a token, from
-token-file FILE or $MCPFSM_TOKEN (make one with 'openssl rand -hex 32';
at least 16 bytes), every request needs "Authorization: Bearer TOKEN" and
any address may be served; without one, only loopback addresses are, and
any other is refused at start. With -oauth-issuer URL -oauth-audience AUD,
-listen is an OAuth 2.1 resource server: JWT access tokens from that
issuer are verified against its published keys, and the Protected
Resource Metadata is served at /.well-known/oauth-protected-resource.
Cross-origin browser requests are refused unless -allow-origin lists the
origin; the Host header must be a loopback name (on loopback), the bound
address or an -allow-host name. -tls-cert and -tls-key serve HTTPS.
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
	tokenFile, legacyToken                    *string
	allowOrigins, allowHosts, scopes          listFlag
	tlsCert, tlsKey                           *string
	oauthIssuer, oauthAudience, oauthResource *string
	oauthJWKS                                 *string
	maxConns                                  *int
}

func addAccessFlags(fs *flag.FlagSet, oauth bool) *accessFlags {
	a := &accessFlags{
		tokenFile:   fs.String("token-file", "", "read the bearer token from `FILE` (mode 0600; default $"+access.EnvToken+")"),
		legacyToken: fs.String("http-token", "", "the bearer `TOKEN` on the command line (deprecated: other users see it in ps; use -token-file or $"+access.EnvToken+")"),
		tlsCert:     fs.String("tls-cert", "", "serve HTTPS with the certificate chain in `FILE` (PEM), with -tls-key"),
		tlsKey:      fs.String("tls-key", "", "the private key of -tls-cert, in `FILE` (PEM)"),
		maxConns:    fs.Int("max-conns", access.DefaultMaxConns, "the most connections each HTTP surface holds open at once (`N`)"),
	}
	fs.Var(&a.allowOrigins, "allow-origin", "accept browser requests from `ORIGIN` (scheme://host[:port]); may be repeated")
	fs.Var(&a.allowHosts, "allow-host", "accept requests addressed to `HOST` (a DNS name clients use, or name:port); may be repeated")
	if oauth {
		a.oauthIssuer = fs.String("oauth-issuer", "", "accept OAuth 2.1 JWT access tokens of the issuer at `URL` on -listen")
		a.oauthAudience = fs.String("oauth-audience", "", "the audience `AUD` tokens must name (default: -oauth-resource)")
		a.oauthResource = fs.String("oauth-resource", "", "this server's resource `URL` in its metadata (default: the -listen endpoint's URL)")
		a.oauthJWKS = fs.String("oauth-jwks", "", "the issuer's key set `URL` (default: from the issuer's metadata)")
		fs.Var(&a.scopes, "oauth-scope", "require `SCOPE` of every token; may be repeated")
	}
	return a
}

// surfaces are the access rules of the two HTTP surfaces, and their TLS.
type surfaces struct {
	mcp     *access.Rule // -listen: the token or OAuth
	console *access.Rule // -http: the token, or its cookie
	tls     *tls.Config  // nil: plain HTTP
}

// build makes the rules. listen is serve's -listen address, for the
// default OAuth resource URL.
func (a *accessFlags) build(listen string, logger *slog.Logger) (*surfaces, error) {
	token, err := access.LoadToken(*a.tokenFile, nil)
	if err != nil {
		return nil, err
	}
	if *a.legacyToken != "" {
		logger.Warn("-http-token puts the token on the command line, where every local user can read it (ps, /proc); use -token-file FILE or $" + access.EnvToken)
		token = *a.legacyToken
	}
	base := access.Config{Token: token, AllowOrigins: a.allowOrigins, AllowHosts: a.allowHosts, MaxConns: *a.maxConns}
	out := &surfaces{}
	if *a.tlsCert != "" || *a.tlsKey != "" {
		if out.tls, err = access.TLSConfig(*a.tlsCert, *a.tlsKey); err != nil {
			return nil, err
		}
	}
	mcpCfg := base
	if a.oauthIssuer != nil && *a.oauthIssuer != "" {
		resource := *a.oauthResource
		if _, port, _ := net.SplitHostPort(listen); resource == "" && (port == "0" || port == "") {
			return nil, fmt.Errorf("-oauth-issuer with -listen %q needs -oauth-resource URL: the endpoint's URL as clients reach it, such as https://mcp.example.com/mcp", listen)
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
		mcpCfg.OAuth = &access.OAuth{Issuer: *a.oauthIssuer, Audience: *a.oauthAudience, Scopes: a.scopes,
			JWKSURL: *a.oauthJWKS, ResourceURL: resource}
	} else if a.oauthAudience != nil && (*a.oauthAudience != "" || len(a.scopes) > 0) {
		return nil, fmt.Errorf("-oauth-audience and -oauth-scope need -oauth-issuer URL")
	}
	if out.mcp, err = access.New(mcpCfg); err != nil {
		return nil, err
	}
	consoleCfg := base
	if token != "" {
		consoleCfg.Cookie = console.CookieName
	}
	consoleCfg.OAuth = mcpCfg.OAuth
	if out.console, err = access.New(consoleCfg); err != nil {
		return nil, err
	}
	return out, nil
}
