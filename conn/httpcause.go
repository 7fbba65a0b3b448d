package conn

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/mcpfsm/mcpfsm/internal/redact"
)

// MaxCauseBytes bounds the server's own words an error quotes: the start
// of an HTTP error body, the end of a stdio server's standard error.
const MaxCauseBytes = 2048

// maxErrorBody bounds how much of an HTTP error body is read at all; the
// SDK decodes a JSON-RPC error from what is read.
const maxErrorBody = 64 << 10

// HTTPError is an HTTP server's error answer (status 400 or above) to a
// request of the generation whose attempt failed or whose connection was
// lost. It travels inside the [*FailedError] or [*LostError]; reach it with
// errors.As.
type HTTPError struct {
	StatusCode int    // such as 503
	Status     string // such as "503 Service Unavailable"
	// Body is the start of the body as the server sent it, at most
	// MaxCauseBytes, with control characters replaced by spaces and what
	// looks like a secret (a URL's query values, an api_key=value) by
	// REDACTED.
	Body string
	// RetryAfter is the wait the server asked for with a Retry-After
	// header (delay-seconds or an HTTP date) on a 429 or 503; zero when
	// it asked for none. The supervisor waits at least this long before
	// its next attempt, backoff or probe, at most MaxRetryAfter.
	RetryAfter time.Duration
}

// Error reads "the server answered HTTP <status>[ (retry after <d>)][: <body>]".
func (e *HTTPError) Error() string {
	msg := "the server answered HTTP " + e.Status
	if e.RetryAfter > 0 {
		msg += " (retry after " + e.RetryAfter.String() + ")"
	}
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
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
	last *HTTPError
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
	he := &HTTPError{StatusCode: resp.StatusCode, Status: resp.Status, Body: redact.Line(quote(body, false))}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		he.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), r.now())
	}
	r.mu.Lock()
	r.last = he
	r.mu.Unlock()
	return resp, nil
}

func (t *httpTransport) cause() error { return t.rec.cause() }

// cause returns the last error answer, if any.
func (r *responseRecorder) cause() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		return nil
	}
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

// quote makes the server's words safe for one log line: at most
// MaxCauseBytes (the start, or with tail the end), valid UTF-8, control
// characters as spaces, trimmed.
func quote(b []byte, tail bool) string {
	if len(b) > MaxCauseBytes {
		if tail {
			b = b[len(b)-MaxCauseBytes:]
		} else {
			b = b[:MaxCauseBytes]
		}
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}
