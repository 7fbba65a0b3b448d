package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfsm/mcpfsm/internal/httpheader"
	"github.com/mcpfsm/mcpfsm/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/net/http/httpguts"
)

// HTTP is the SDK's Streamable HTTP transport of one generation, with a
// record of how the server answered: whether it refused authorization (so
// that a refusal can be told from an outage), and its last error answer.
type HTTP struct {
	*mcp.StreamableClientTransport
	watch *authWatch
	rec   *responseRecorder // the last error answer, see Answer
}

// NewHTTP returns a fresh transport for one generation of the server at
// endpoint. Its HTTP client is a copy of client (nil: http.DefaultClient)
// that adds header to every request to the endpoint's origin (see package
// httpheader) and what conn's Config.Propagate set for a request
// ([WithPropagated]), and keeps the server's last error answer, so that a
// failure or loss can say what the server said and honour its
// Retry-After.
func NewHTTP(endpoint string, client *http.Client, header http.Header, oauth auth.OAuthHandler) *HTTP {
	if client == nil {
		client = http.DefaultClient
	}
	watch := &authWatch{}
	if oauth != nil {
		oauth = &signInWatch{OAuthHandler: oauth, watch: watch}
	}
	hc := *client
	next := client.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	rec := &responseRecorder{base: next, now: time.Now}
	hc.Transport = &watchTransport{next: httpheader.New(endpoint, header, propagateHeaders{rec}), watch: watch}
	return &HTTP{
		StreamableClientTransport: &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &hc, OAuthHandler: oauth},
		watch:                     watch,
		rec:                       rec,
	}
}

// Refused returns the status of the latest answer if it refused
// authorization (401 or 403), else 0.
func (t *HTTP) Refused() int { return t.watch.refused() }

// LastAnswer returns the server's last error answer to a POST, or nil.
func (t *HTTP) LastAnswer() *Answer { return t.rec.answer() }

// SignIn returns the error with which the OAuth handler last said that it
// holds no usable credential (one matching [ErrNeedsAuthorization]), or
// nil when its last Authorize did not say so.
func (t *HTTP) SignIn() error {
	if p := t.watch.signIn.Load(); p != nil {
		return *p
	}
	return nil
}

// setToken adds the OAuth handler's access token to req, as the SDK does
// to its own requests.
func setToken(ctx context.Context, h auth.OAuthHandler, req *http.Request) error {
	if h == nil {
		return nil
	}
	ts, err := h.TokenSource(ctx)
	if err != nil || ts == nil {
		return err
	}
	tok, err := ts.Token()
	if err != nil {
		return nil // the server's 401 goes to the handler's Authorize
	}
	if tok != nil && tok.AccessToken != "" {
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	}
	return nil
}

// Handler returns the OAuth handler the transport was given, or nil.
func (t *HTTP) Handler() auth.OAuthHandler {
	if w, ok := t.OAuthHandler.(*signInWatch); ok {
		return w.OAuthHandler
	}
	return t.OAuthHandler
}

// ErrNeedsAuthorization is matched by the error an OAuth handler's
// Authorize returns when it holds no usable credential and a person must
// sign in (conn's ErrNeedsAuthorization).
var ErrNeedsAuthorization = errors.New("sign-in required")

// authWatch records the status of the latest HTTP answer, and whether the
// OAuth handler last asked for a sign-in.
type authWatch struct {
	status atomic.Int32
	signIn atomic.Pointer[error]
}

// signInWatch is the OAuth handler of a generation's transport: it
// records what its Authorize said about signing in.
type signInWatch struct {
	auth.OAuthHandler
	watch *authWatch
}

func (h *signInWatch) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	err := h.OAuthHandler.Authorize(ctx, req, resp)
	if err != nil && errors.Is(err, ErrNeedsAuthorization) {
		h.watch.signIn.Store(&err)
	} else {
		h.watch.signIn.Store(nil)
	}
	return err
}

// refused returns the status of the latest answer if it refused
// authorization (401 or 403), else 0.
func (w *authWatch) refused() int {
	if st := int(w.status.Load()); st == http.StatusUnauthorized || st == http.StatusForbidden {
		return st
	}
	return 0
}

// watchTransport records every answer's status.
type watchTransport struct {
	next  http.RoundTripper
	watch *authWatch
}

func (t *watchTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil {
		t.watch.status.Store(int32(resp.StatusCode))
	}
	return resp, err
}

// maxErrorBody bounds how much of an HTTP error body is read at all; the
// SDK decodes a JSON-RPC error from what is read.
const maxErrorBody = 64 << 10

// MaxRetryAfter caps the Retry-After a server may ask for (conn's
// MaxRetryAfter).
const MaxRetryAfter = time.Hour

// Answer is an HTTP server's error answer (status 400 or above) to a POST,
// what conn's HTTPError reports.
type Answer struct {
	StatusCode int    // such as 503
	Status     string // such as "503 Service Unavailable"
	// Body is the start of the body as the server sent it, at most
	// MaxCauseBytes, with control characters replaced by spaces and what
	// looks like a secret (a URL's query values, an api_key=value) by
	// REDACTED.
	Body string
	// RetryAfter is the wait the server asked for with a Retry-After
	// header (delay-seconds or an HTTP date) on a 429 or 503, at most
	// MaxRetryAfter; zero when it asked for none.
	RetryAfter time.Duration
}

// responseRecorder is the RoundTripper of one generation's HTTP client: it
// keeps the last error answer to a POST (the requests that carry MCP
// messages; the optional GET stream's 405 is no failure), forgotten at
// the next successful POST, so that a loss long after a refused request
// does not blame it.
type responseRecorder struct {
	base http.RoundTripper
	now  func() time.Time // for Retry-After dates

	mu   sync.Mutex
	last *Answer
}

func (r *responseRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost {
		return resp, err
	}
	if resp.StatusCode < 400 {
		r.mu.Lock()
		r.last = nil
		r.mu.Unlock()
		return resp, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	a := &Answer{StatusCode: resp.StatusCode, Status: resp.Status, Body: redact.Line(quote(body, false))}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		a.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), r.now())
	}
	r.mu.Lock()
	r.last = a
	r.mu.Unlock()
	return resp, nil
}

// answer returns the last error answer, if any.
func (r *responseRecorder) answer() *Answer {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// parseRetryAfter reads a Retry-After value: delay-seconds or an HTTP date
// (RFC 9110 §10.2.3). Anything else, or a time already past, is zero.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		if n > int64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		// The date has whole seconds: so has the wait, rounded up.
		return min((t.Sub(now) + time.Second - 1).Truncate(time.Second), MaxRetryAfter)
	}
	return 0
}

// propagatedKey holds, in a request's context, the keys and values
// conn's Config.Propagate set for it, for the HTTP transport's headers.
type propagatedKey struct{}

// WithPropagated returns ctx carrying kv (a key, a value, a key...), what
// conn's Config.Propagate set for the request made with it, which the HTTP
// transport adds to the request's headers.
func WithPropagated(ctx context.Context, kv []string) context.Context {
	return context.WithValue(ctx, propagatedKey{}, kv)
}

// propagateHeaders is the HTTP transport's round-tripper that adds what
// Config.Propagate set for a request to its HTTP headers. A header the
// request already has (the SDK's own, Authorization) is kept as it is,
// and a key or value no header can carry is left to _meta.
type propagateHeaders struct{ next http.RoundTripper }

func (t propagateHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
	kv, _ := req.Context().Value(propagatedKey{}).([]string)
	if len(kv) == 0 {
		return t.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for i := 0; i < len(kv); i += 2 {
		k, v := http.CanonicalHeaderKey(kv[i]), kv[i+1]
		if _, set := req.Header[k]; !set && httpguts.ValidHeaderFieldName(k) && httpguts.ValidHeaderFieldValue(v) {
			req.Header[k] = []string{v}
		}
	}
	return t.next.RoundTrip(req)
}

// DiscoverHTTP posts a server/discover request of protocol, with params, to
// st's endpoint with st's HTTP client (so with its headers): the keep-alive
// probe of protocol 2026-07-28 on Streamable HTTP, sent beside the SDK. An
// HTTP 5xx is a failure; any other answer, an error included, proves that
// the server reads and answers.
func DiscoverHTTP(ctx context.Context, st *mcp.StreamableClientTransport, protocol string, params any) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "mcpfsm-probe", "method": MethodDiscover, "params": params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, st.Endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", protocol)
	req.Header.Set("Mcp-Method", MethodDiscover)
	if err := setToken(ctx, st.OAuthHandler, req); err != nil {
		return err
	}
	c := st.HTTPClient
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	if (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) && st.OAuthHandler != nil {
		// The handler refreshes the token for the next request, or says
		// that a person must sign in: then the probe failed. It closes
		// the body.
		if err := st.OAuthHandler.Authorize(ctx, req, resp); errors.Is(err, ErrNeedsAuthorization) {
			return fmt.Errorf("%s answered HTTP %d: %w", MethodDiscover, resp.StatusCode, err)
		}
		return nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	_ = resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("%s answered HTTP %d", MethodDiscover, resp.StatusCode)
	}
	return nil
}
