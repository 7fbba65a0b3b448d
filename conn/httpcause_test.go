package conn_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
)

// TestHTTPErrorAnswerIsTheCause: an HTTP server's error answer is in the
// failure (status and body), and its Retry-After is the next delay.
func TestHTTPErrorAnswerIsTheCause(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		retryAfter string
		wantDelay  time.Duration
		wantText   string
	}{
		{"503 with seconds", http.StatusServiceUnavailable, "120", 120 * time.Second, "the server answered HTTP 503 Service Unavailable (retry after 2m0s): overloaded: try later"},
		{"429 with a date", http.StatusTooManyRequests, "DATE+90s", 90 * time.Second, "the server answered HTTP 429 Too Many Requests (retry after 1m3"},
		{"429 asking for days is capped", http.StatusTooManyRequests, "999999", conn.MaxRetryAfter, "(retry after 1h0m0s)"},
		{"500 has no Retry-After", http.StatusInternalServerError, "120", time.Second, "the server answered HTTP 500 Internal Server Error: overloaded: try later"},
		{"404 says why", http.StatusNotFound, "", time.Second, "the server answered HTTP 404 Not Found: overloaded: try later"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ra := tt.retryAfter
				if rest, ok := strings.CutPrefix(ra, "DATE+"); ok {
					d, _ := time.ParseDuration(rest)
					// One second more: the date has whole seconds, and a
					// little time passes before the client reads it.
					ra = time.Now().Add(d + time.Second).UTC().Format(http.TimeFormat)
				}
				if ra != "" {
					w.Header().Set("Retry-After", ra)
				}
				http.Error(w, "overloaded:\ntry later", tt.status)
			}))
			defer srv.Close()
			rec := conntest.NewRecorder()
			p := policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: time.Second, MaxAttempts: 3}
			sup, err := conn.Start(context.Background(), conn.Config{
				Name: "fx", Transport: conn.Streamable(srv.URL), Registry: conn.NewRegistry(), Reconnect: &p,
				Clock: clock.NewMock(), Logger: rec.Logger(), OnTransition: rec.OnTransition,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer sup.Close(context.Background())
			tr := rec.Expect(t, waitLimit, conn.FailedRetrying)[0]
			var he *conn.HTTPError
			if !errors.As(tr.Err, &he) || he.StatusCode != tt.status {
				t.Fatalf("err = %v, want an *HTTPError with status %d", tr.Err, tt.status)
			}
			if !strings.Contains(tr.Err.Error(), tt.wantText) {
				t.Errorf("err = %v, want it to contain %q", tr.Err, tt.wantText)
			}
			delay := tr.Delay
			if strings.HasPrefix(tt.retryAfter, "DATE+") { // whole seconds, minus the time in flight
				delay = delay.Round(10 * time.Second)
			}
			if delay != tt.wantDelay {
				t.Errorf("delay = %v, want %v", tr.Delay, tt.wantDelay)
			}
		})
	}
}

// TestUnresolvableHostIsPermanent: a host the resolver says does not exist
// ends in failed-permanent after one confirming retry, naming the fix.
func TestUnresolvableHostIsPermanent(t *testing.T) {
	notFound := roundTripper(func(r *http.Request) (*http.Response, error) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: r.URL.Hostname(), IsNotFound: true}}
	})
	h := &conn.HTTP{Endpoint: "http://mcp.example.invalid/mcp", Client: &http.Client{Transport: notFound}}
	rec := conntest.NewRecorder()
	clk := clock.NewMock()
	sup, err := conn.Start(context.Background(), conn.Config{
		Name: "fx", Transport: h, Registry: conn.NewRegistry(), Clock: clk, Logger: rec.Logger(), OnTransition: rec.OnTransition,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Close(context.Background())
	first := rec.Expect(t, waitLimit, conn.FailedRetrying)[0]
	if !errors.Is(first.Err, conn.ErrPermanent) {
		t.Errorf("first failure %v, want ErrPermanent", first.Err)
	}
	clk.Add(first.Delay)
	tr := rec.Expect(t, waitLimit, conn.Connecting, conn.FailedPermanent)[1]
	var pe *conn.PermanentError
	if !errors.As(tr.Err, &pe) || pe.Fix != conn.FixHost {
		t.Errorf("err = %v, want a *PermanentError with fix %q", tr.Err, conn.FixHost)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
