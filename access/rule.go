package access

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

type subjectKey struct{}

// SubjectToken is the [Subject] of a request authenticated by the static
// token (header or cookie): the operator.
const SubjectToken = "token"

// Subject returns who was authenticated for the request whose context is
// ctx, each kind in its own namespace: SubjectToken for the static token,
// SubjectOAuthSub and the JWT's "sub" ("oauth:sub:alice") for an OAuth
// token, or SubjectOAuthClient and its "client_id" ("oauth:client:robot")
// when it has no sub; "" when the rule asks for no credential or ctx did
// not pass a Rule. A token with neither sub nor client_id is refused. The
// same string is the UserID of the request's go-sdk auth.TokenInfo, which
// binds an MCP session to whoever opened it.
func Subject(ctx context.Context) string {
	s, _ := ctx.Value(subjectKey{}).(string)
	return s
}

// Wrap returns h behind the rule: Host, then Origin, then authentication
// (see the package doc). Refusals are answered with a JSON body
// {"error": "..."} naming the fix; with OAuth, the Protected Resource
// Metadata is answered at its well-known paths without authentication.
func (r *Rule) Wrap(h http.Handler) http.Handler {
	next := h
	if r.oauth != nil {
		next = r.oauth.withTokenInfo(h)
	}
	withToken := staticTokenInfo(h)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if msg := r.checkHost(req); msg != "" {
			r.refuse(w, req, http.StatusForbidden, msg)
			return
		}
		if r.oauth != nil && r.oauth.isMetadataPath(req.URL.Path) {
			r.oauth.metadata.ServeHTTP(w, req)
			return
		}
		if msg := r.checkOrigin(req); msg != "" {
			r.refuse(w, req, http.StatusForbidden, msg)
			return
		}
		if r.cors(w, req) {
			return
		}
		if !r.Authenticated() {
			h.ServeHTTP(w, req)
			return
		}
		if r.cfg.Token != "" {
			if tok, ok := bearer(req); ok && r.tokenIs(tok) {
				withToken.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), subjectKey{}, SubjectToken)))
				return
			}
			if r.cfg.Cookie != "" {
				if ck, err := req.Cookie(r.cfg.Cookie); err == nil && r.tokenIs(ck.Value) {
					h.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), subjectKey{}, SubjectToken)))
					return
				}
				if r.cookieLogin(w, req) {
					return
				}
			}
		}
		if r.oauth != nil && (!r.oauth.cfg.Forbidden || r.cfg.Token == "") {
			if tok, ok := bearer(req); ok {
				r.oauth.serve(w, req, tok, next, r.refuse)
				return
			}
			r.oauth.challenge(w, "")
			r.refuse(w, req, http.StatusUnauthorized, "missing bearer token: send \"Authorization: Bearer TOKEN\" with an access token from "+r.oauth.cfg.Issuer)
			return
		}
		if r.oauth != nil {
			// Forbidden beside the static token: an OAuth token is
			// recognised (403) rather than taken for a wrong token (401).
			if tok, ok := bearer(req); ok && strings.Count(tok, ".") == 2 {
				r.oauth.serve(w, req, tok, next, r.refuse)
				return
			}
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcpfsm"`)
		msg := "missing or wrong token: send \"Authorization: Bearer TOKEN\""
		if r.cfg.Cookie != "" {
			msg += ", or open /?token=TOKEN once in a browser"
		}
		r.refuse(w, req, http.StatusUnauthorized, msg)
	})
}

// cookieLogin answers a GET carrying ?token=TOKEN: it sets the cookie and
// redirects to the same URL without the token, so the token leaves the
// address bar and the history. It reports whether it answered.
func (r *Rule) cookieLogin(w http.ResponseWriter, req *http.Request) bool {
	q := req.URL.Query()
	tok := q.Get("token")
	if tok == "" || req.Method != http.MethodGet || !r.tokenIs(tok) {
		return false
	}
	http.SetCookie(w, &http.Cookie{
		Name: r.cfg.Cookie, Value: tok, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: req.TLS != nil,
	})
	q.Del("token")
	http.Redirect(w, req, sameOrigin(req.URL.EscapedPath(), q.Encode()), http.StatusSeeOther)
	return true
}

// sameOrigin returns a Location on the request's own origin for path and
// query: a path of "//evil.example/" or "/\\evil.example" (which
// browsers read as another host) keeps a single leading slash.
func sameOrigin(path, query string) string {
	loc := "/" + strings.TrimLeft(path, "/\\")
	if query != "" {
		loc += "?" + query
	}
	return loc
}

func (r *Rule) tokenIs(s string) bool {
	return subtle.ConstantTimeCompare([]byte(s), []byte(r.cfg.Token)) == 1
}

// bearer returns the credential of an "Authorization: Bearer X" header
// (the scheme is case-insensitive).
func bearer(req *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(req.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// checkHost returns why req's Host is refused, or "".
//
// A request without a local address in its context (a handler called in
// process, not by an http.Server) is judged as if on a loopback
// connection.
func (r *Rule) checkHost(req *http.Request) string {
	name, port := req.Host, ""
	if h, p, err := net.SplitHostPort(req.Host); err == nil {
		name, port = h, p
	}
	name = strings.ToLower(strings.Trim(name, "[]"))
	var local net.IP
	if a, ok := req.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if tcp, ok := a.(*net.TCPAddr); ok {
			local = tcp.IP
		} else if h, _, err := net.SplitHostPort(a.String()); err == nil {
			local = net.ParseIP(h)
		}
	}
	onLoopback := local == nil || local.IsLoopback()
	switch {
	case onLoopback && loopbackName(name):
		return ""
	case local != nil && !local.IsUnspecified() && local.Equal(net.ParseIP(name)):
		return ""
	}
	for _, a := range r.hosts {
		if a.name == name && (a.port == "" || a.port == port) {
			return ""
		}
	}
	if onLoopback {
		return fmt.Sprintf("host %q refused: on a loopback connection only loopback names (127.0.0.1, localhost, [::1]) are served; name it with -allow-host to serve it", req.Host)
	}
	return fmt.Sprintf("host %q refused: the server answers to its own address and the names given with -allow-host; add -allow-host %s if clients reach it by that name", req.Host, name)
}

// checkOrigin returns why req's Origin (or Sec-Fetch-Site) is refused, or
// "".
func (r *Rule) checkOrigin(req *http.Request) string {
	if o := req.Header.Get("Origin"); o != "" {
		scheme := "http"
		if req.TLS != nil {
			scheme = "https"
		}
		n, err := normalOrigin(o)
		if err != nil || (n != originOf(scheme, req.Host) && !r.origins[n]) {
			return fmt.Sprintf("cross-origin %s from %q refused; add -allow-origin ORIGIN to serve a web client at that origin", req.Method, o)
		}
		return ""
	}
	// Without Origin, a browser's Sec-Fetch-Site still tells a cross-site
	// request that changes something (http.CrossOriginProtection's rule).
	if err := r.cop.Check(req); err != nil {
		return fmt.Sprintf("cross-origin %s refused (%v); add -allow-origin ORIGIN to serve a web client at that origin", req.Method, err)
	}
	return ""
}

// CORS of the origins of Config.AllowOrigins: what a browser client at
// such an origin may send and read.
const (
	corsMethods = "GET, POST, DELETE, OPTIONS"
	corsHeaders = "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID"
	corsExpose  = "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate, Retry-After"
	corsMaxAge  = "600"
)

// cors adds the CORS headers to the answer of a request from an origin of
// Config.AllowOrigins (checkOrigin has let it through), and answers a
// preflight (OPTIONS with Access-Control-Request-Method) itself, before
// authentication: a browser sends no credentials on a preflight. It
// reports whether it answered. The request's own origin needs no CORS.
func (r *Rule) cors(w http.ResponseWriter, req *http.Request) bool {
	o := req.Header.Get("Origin")
	if o == "" {
		return false
	}
	n, err := normalOrigin(o)
	if err != nil || !r.origins[n] {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", o)
	h.Add("Vary", "Origin")
	if req.Method != http.MethodOptions || req.Header.Get("Access-Control-Request-Method") == "" {
		h.Set("Access-Control-Expose-Headers", corsExpose)
		return false
	}
	h.Add("Vary", "Access-Control-Request-Method")
	h.Add("Vary", "Access-Control-Request-Headers")
	h.Set("Access-Control-Allow-Methods", corsMethods)
	h.Set("Access-Control-Allow-Headers", corsHeaders)
	h.Set("Access-Control-Max-Age", corsMaxAge)
	w.WriteHeader(http.StatusNoContent)
	return true
}

// errorBody is the JSON body of every refusal.
type errorBody struct {
	Error string `json:"error"`
}

func (r *Rule) refuse(w http.ResponseWriter, req *http.Request, code int, msg string) {
	r.log.Debug("access: refused", "code", code, "method", req.Method, "path", req.URL.Path, "remote", req.RemoteAddr, "why", msg)
	writeError(w, code, msg)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	b, _ := json.Marshal(errorBody{Error: msg})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

// staticTokenInfo gives a request that carried the static token go-sdk's
// auth.TokenInfo with UserID SubjectToken, as an OAuth token's has its
// subject: a front sees who called (RequestExtra.TokenInfo), for its
// audit trail. The token is already checked when it runs. Its Extra
// holds the operator's mark ([Operator]).
func staticTokenInfo(h http.Handler) http.Handler {
	return auth.RequireBearerToken(func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: SubjectToken, Expiration: time.Now().Add(time.Hour),
			Extra: map[string]any{operatorKey: operatorMark{}}}, nil
	}, nil)(h)
}

// operatorKey holds, in the TokenInfo.Extra of the static token, a value
// of a type no other package can make.
const operatorKey = "mcpfsm.operator"

type operatorMark struct{}

// Operator reports whether info is the static token's: the operator, who
// passes every per-caller rule. Only this package marks it; an OAuth
// token never is the operator, whatever its subject (an access token
// whose "sub" is "token" has the Subject SubjectToken but is not it).
func Operator(info *auth.TokenInfo) bool {
	if info == nil {
		return false
	}
	_, ok := info.Extra[operatorKey].(operatorMark)
	return ok
}
