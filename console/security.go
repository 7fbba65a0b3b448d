package console

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mcpfsm/mcpfsm/access"
	"github.com/mcpfsm/mcpfsm/health"
)

// Environment variables the command reads; flags take precedence.
const (
	// EnvToken holds the bearer token (flag -http-token); the same as
	// access.EnvLegacyToken, which access.LoadToken also reads.
	EnvToken = access.EnvLegacyToken
	// EnvAddr holds the console's address (flag -http), for the commands
	// that talk to a running host.
	EnvAddr = "MCPFSM_HTTP"
)

// CookieName is the cookie the page sets after /?token=TOKEN; a Rule
// given in Options.Rule should have it as its Config.Cookie.
const CookieName = "mcpfsm_token"

const cookieName = CookieName

// ErrNeedToken is returned by [Listen] for a non-loopback address without
// a token. It is access.ErrNeedAuth.
var ErrNeedToken = access.ErrNeedAuth

// Limits of the console's own requests.
const (
	// MaxBodyBytes bounds a request body: the console's POSTs carry none.
	MaxBodyBytes = 1 << 20
	// ReconnectInterval is the least time between two manual reconnects of
	// one server, two "reconnect all" or two reloads; one sooner is
	// answered 429 with Retry-After.
	ReconnectInterval = time.Second
)

// Listen opens a TCP listener for the console on addr. Without a token it
// refuses any address that is not loopback (127.0.0.0/8, ::1, localhost):
// ":7777" and "0.0.0.0:7777" listen on every interface and need a token
// (flag -token-file, or MCPFSM_TOKEN). The check is made on the
// address actually bound, so a host name resolving elsewhere is refused
// too. A token must pass access.CheckToken.
//
// It is access.Rule.Listen for a rule of token alone; a host serving the
// console under a rule of its own calls that rule's Listen instead.
func Listen(addr, token string) (net.Listener, error) {
	rule, err := access.New(access.Config{Token: token})
	if err != nil {
		return nil, fmt.Errorf("console: -http-token: %w", err)
	}
	ln, err := rule.Listen(addr)
	if errors.Is(err, access.ErrNeedAuth) {
		return nil, fmt.Errorf("console: -http %s: %w", addr, err)
	}
	if err != nil {
		return nil, fmt.Errorf("console: -http: %w", err)
	}
	return ln, nil
}

// Serve answers requests on ln until ctx ends, then closes the console's
// event streams and shuts the server down, waiting at most 5 s for the
// requests in flight. It returns nil after a shutdown caused by ctx. The
// server has the limits of access.NewServer.
func (c *Console) Serve(ctx context.Context, ln net.Listener) error {
	srv := access.NewServer(c, access.ServerOptions{TLSConfig: c.opts.TLS, Uncapped: []string{health.LivePath}})
	errc := make(chan error, 1)
	go func() {
		if c.opts.TLS != nil {
			errc <- srv.ServeTLS(ln, "", "")
			return
		}
		errc <- srv.Serve(ln)
	}()
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

// guard returns the console's router behind its access rule
// (Options.Rule, or one made from Options.Token) and body limit. A rule
// that cannot be made (a token too short) refuses every request, naming
// why: the console fails closed.
func (c *Console) guard(route http.Handler) http.Handler {
	rule := c.opts.Rule
	if rule == nil {
		var err error
		rule, err = access.New(access.Config{Token: c.opts.Token, Cookie: cookieIf(c.opts.Token), Logger: c.opts.Logger})
		if err != nil {
			c.log.Error("console: refusing every request", "err", err)
			msg := "the console's access rule is broken: " + err.Error()
			return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				c.writeError(w, http.StatusInternalServerError, msg)
			})
		}
	}
	return rule.Wrap(access.LimitBody(route, MaxBodyBytes))
}

func cookieIf(token string) string {
	if token == "" {
		return ""
	}
	return CookieName
}

// contentSecurityPolicy lets the page load only its own script, style and
// data, and be framed by nobody. The diagram's <style> element (inline in
// the SVG the page inserts) is allowed by its hash.
var contentSecurityPolicy = "default-src 'self'; style-src 'self' 'sha256-" + styleHash(diagramCSS) +
	"'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func styleHash(css string) string {
	sum := sha256.Sum256([]byte(css))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// setSecurityHeaders sets the headers every answer carries.
func setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}

// reconnectLimit remembers the last time of each manual action: a
// server's reconnect ("server:NAME"), "reconnect all" ("all") and a
// reload ("reload").
type reconnectLimit struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// allowManual reports whether the manual action key may start now (at
// most one a ReconnectInterval), and answers 429 with Retry-After when it
// may not; done says what happened, for the refusal ("the config
// reloaded").
func (c *Console) allowManual(w http.ResponseWriter, key, done string) bool {
	now := c.clk.Now()
	l := &c.limit
	l.mu.Lock()
	if l.last == nil {
		l.last = map[string]time.Time{}
	}
	wait := ReconnectInterval - now.Sub(l.last[key])
	if _, seen := l.last[key]; !seen || wait <= 0 {
		l.last[key] = now
		l.mu.Unlock()
		return true
	}
	l.mu.Unlock()
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
	c.writeError(w, http.StatusTooManyRequests, fmt.Sprintf("%s less than %v ago; retry after %v", done, ReconnectInterval, wait.Round(time.Millisecond)))
	return false
}
