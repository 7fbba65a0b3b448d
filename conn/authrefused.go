package conn

import (
	"fmt"
	"net/http"
	"time"
)

// AuthError is the error of an attempt whose server refused authorization:
// its last HTTP answer was 401 Unauthorized or 403 Forbidden, after the
// HTTP.OAuthHandler gave up or with none set. It is not an outage: retrying
// with the same credentials cannot succeed, so the supervisor stops in
// [AuthRefused] without spending its outage budget.
type AuthError struct {
	Server     string
	Status     int    // the HTTP status: 401 or 403
	Generation uint64 // the generation the attempt created
	Err        error  // the attempt's error
}

// Error reads `mcp server "<name>": authorization refused (HTTP 401): <cause>; ...`.
func (e *AuthError) Error() string {
	return fmt.Sprintf("mcp server %q: authorization refused (HTTP %d %s): %v; fix the credentials (HTTP.Header or HTTP.OAuthHandler), then restart the supervisor",
		e.Server, e.Status, http.StatusText(e.Status), e.Err)
}

// Unwrap returns the attempt's error.
func (e *AuthError) Unwrap() error { return e.Err }

func sayAuthRefused(phrase string, _ Transition, _ time.Duration) (string, []any) {
	return phrase + "; not retrying: fix the credentials (HTTP.Header or HTTP.OAuthHandler), then " + recoverHint, nil
}
