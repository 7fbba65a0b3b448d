package conn

import (
	"time"

	"github.com/mcpfsm/mcpfsm/conn/internal/transport"
)

// MaxCauseBytes bounds the server's own words an error quotes: the start
// of an HTTP error body, the end of a stdio server's standard error.
const MaxCauseBytes = 2048

// The bound is spelled out above for the reader of conn's documentation;
// this fails to compile if it ever parts from the one the transport applies.
const _ = uint(MaxCauseBytes-transport.MaxCauseBytes) + uint(transport.MaxCauseBytes-MaxCauseBytes)

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
