package console

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Environment variables the command reads; flags take precedence.
const (
	// EnvToken holds the bearer token (flag -http-token).
	EnvToken = "MCPFSM_HTTP_TOKEN"
	// EnvAddr holds the console's address (flag -http), for the commands
	// that talk to a running host.
	EnvAddr = "MCPFSM_HTTP"
)

// cookieName is the cookie the page sets after /?token=TOKEN.
const cookieName = "mcpfsm_token"

// ErrNeedToken is returned by [Listen] for a non-loopback address without
// a token.
var ErrNeedToken = errors.New("a non-loopback address needs a bearer token")

// Listen opens a TCP listener for the console on addr. Without a token it
// refuses any address that is not loopback (127.0.0.0/8, ::1, localhost):
// ":7777" and "0.0.0.0:7777" listen on every interface and need a token
// (flag -http-token or MCPFSM_HTTP_TOKEN). The check is made on the
// address actually bound, so a host name resolving elsewhere is refused
// too.
func Listen(addr, token string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("console: -http %q: %w; use HOST:PORT, e.g. 127.0.0.1:7777", addr, err)
	}
	if token == "" && !loopbackName(host) {
		return nil, needToken(addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && token == "" && !tcp.IP.IsLoopback() {
		ln.Close()
		return nil, needToken(addr)
	}
	return ln, nil
}

func needToken(addr string) error {
	return fmt.Errorf("console: refusing to serve on %q: %w; listen on 127.0.0.1:PORT, or set a token with -http-token or %s",
		addr, ErrNeedToken, EnvToken)
}

// loopbackName reports whether a host name or address is loopback.
func loopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Serve answers requests on ln until ctx ends, then closes the console's
// event streams and shuts the server down, waiting at most 5 s for the
// requests in flight. It returns nil after a shutdown caused by ctx.
func (c *Console) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		c.Close()
		return err
	case <-ctx.Done():
	}
	c.Close()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// authorize applies the access rules and answers the request itself when
// it is refused (or redirected), reporting whether to go on.
//
// Without a token, only requests addressed to a loopback host name are
// served: a web page elsewhere cannot rebind its own name to 127.0.0.1 and
// read the API. With one, a request needs "Authorization: Bearer TOKEN" or
// the cookie that a GET with ?token=TOKEN sets (that GET is redirected to
// the same URL without the token, so the token leaves the address bar).
// In both cases a request that changes something (POST) from a browser
// must come from the console's own origin.
func (c *Console) authorize(w http.ResponseWriter, r *http.Request) bool {
	if c.opts.Token == "" {
		host := r.Host
		if h, _, err := net.SplitHostPort(r.Host); err == nil {
			host = h
		}
		if !loopbackName(host) {
			c.writeError(w, http.StatusForbidden, fmt.Sprintf(
				"host %q refused: without a token the console answers only to loopback names (127.0.0.1, localhost, [::1]); set -http-token or %s to serve others",
				r.Host, EnvToken))
			return false
		}
	} else if !c.authenticated(w, r) {
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || u.Host != r.Host {
				c.writeError(w, http.StatusForbidden, fmt.Sprintf("cross-origin %s from %q refused", r.Method, o))
				return false
			}
		}
	}
	return true
}

// authenticated checks the bearer token, then the cookie, then ?token=.
func (c *Console) authenticated(w http.ResponseWriter, r *http.Request) bool {
	if auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && c.tokenIs(auth) {
		return true
	}
	if ck, err := r.Cookie(cookieName); err == nil && c.tokenIs(ck.Value) {
		return true
	}
	q := r.URL.Query()
	if tok := q.Get("token"); tok != "" && r.Method == http.MethodGet && c.tokenIs(tok) {
		http.SetCookie(w, &http.Cookie{
			Name: cookieName, Value: tok, Path: "/", HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
		})
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return false
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="mcpfsm"`)
	c.writeError(w, http.StatusUnauthorized,
		"missing or wrong token: send \"Authorization: Bearer TOKEN\", or open /?token=TOKEN once in a browser")
	return false
}

func (c *Console) tokenIs(s string) bool {
	return subtle.ConstantTimeCompare([]byte(s), []byte(c.opts.Token)) == 1
}
