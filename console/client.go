package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// ErrNoHost is returned by [Client] calls when nothing answers at the
// console's address.
var ErrNoHost = errors.New("no mcpfsm host is running there")

// Client talks to the console of a running host: the commands
// "mcpfsm status" and "mcpfsm reconnect" are built on it.
type Client struct {
	// Addr is the console's address as given to -http ("127.0.0.1:7777")
	// or a base URL ("http://127.0.0.1:7777").
	Addr string
	// Token is the bearer token, if the host has one.
	Token string
	// HTTP is the client to use; nil means one with no overall timeout
	// (a reconnect waits for its attempt; bound calls with their ctx).
	HTTP *http.Client
}

// APIError is an error answer of the console: its HTTP status and the
// message of its JSON body.
type APIError struct {
	StatusCode int
	Message    string
	// RetryAfter is the wait the console asked for (429 Retry-After).
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s (HTTP %d)", e.Message, e.StatusCode)
}

// Status returns the host's status report (GET /api/status).
func (c *Client) Status(ctx context.Context) (*StatusReport, error) {
	var r StatusReport
	if err := c.do(ctx, http.MethodGet, "/api/status", &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Reconnect asks the host to reconnect one server now and waits for the
// attempt's outcome (POST /api/servers/NAME/reconnect). A failed attempt
// is an *APIError whose message is the cause; an unknown name matches
// [ErrUnknownServer].
//
// The console takes one manual reconnect of a server a second; asked
// sooner, Reconnect waits as long as it says (at most [MaxRetryWait])
// and asks once more.
func (c *Client) Reconnect(ctx context.Context, name string) (*ReconnectResult, error) {
	var r ReconnectResult
	err := c.retried(ctx, func() error {
		return c.do(ctx, http.MethodPost, "/api/servers/"+url.PathEscape(name)+"/reconnect", &r)
	})
	var ae *APIError
	if errors.As(err, &ae) && ae.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("%w %q: %s", ErrUnknownServer, name, ae.Message)
	}
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// ReconnectAll asks the host to reconnect every server (POST
// /api/reconnect). When some did not come back, it returns the results
// and an *APIError saying how many.
func (c *Client) ReconnectAll(ctx context.Context) (*ReconnectAllResult, error) {
	var r ReconnectAllResult
	err := c.retried(ctx, func() error { return c.do(ctx, http.MethodPost, "/api/reconnect", &r) })
	return &r, err
}

// MaxRetryWait is the longest a [Client] waits for a console that asked
// it to retry later (429 with Retry-After) before it asks again.
const MaxRetryWait = 5 * time.Second

// retried runs do, and once more after the wait a 429 answer asked for.
func (c *Client) retried(ctx context.Context, do func() error) error {
	err := do()
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusTooManyRequests || ae.RetryAfter > MaxRetryWait {
		return err
	}
	t := time.NewTimer(ae.RetryAfter)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return err
	}
	return do()
}

// Reload asks the host to re-read its configuration (POST /api/reload).
func (c *Client) Reload(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/api/reload", nil)
}

// base returns the console's base URL.
func (c *Client) base() string {
	a := strings.TrimRight(c.Addr, "/")
	if !strings.Contains(a, "://") {
		a = "http://" + a
	}
	return a
}

// do sends one request and decodes the JSON answer into out (also on an
// error status, so partial results reach the caller).
func (c *Client) do(ctx context.Context, method, path string, out any) error {
	if c.Addr == "" {
		return fmt.Errorf("console: no host address; pass -http HOST:PORT or set %s", EnvAddr)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base()+path, nil)
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if op := (*net.OpError)(nil); errors.As(err, &op) && op.Op == "dial" {
			return fmt.Errorf("console: %w at %s (%v); start one with mcpfsm run -http %s, or check -http/%s",
				ErrNoHost, c.Addr, op.Err, strings.TrimPrefix(c.base(), "http://"), EnvAddr)
		}
		return fmt.Errorf("console: %s %s: %w", method, c.base()+path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("console: reading the answer to %s %s: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e apiError
		if json.Unmarshal(body, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(body))
			if resp.Header.Get("Content-Type") != "application/json" {
				e.Error = fmt.Sprintf("%s answered %s: is this an mcpfsm console?", c.base(), resp.Status)
			}
		}
		if out != nil {
			_ = json.Unmarshal(body, out)
		}
		ae := &APIError{StatusCode: resp.StatusCode, Message: e.Error}
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
			ae.RetryAfter = time.Duration(secs) * time.Second
		}
		return ae
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("console: %s %s: decoding the answer: %w", method, path, err)
	}
	return nil
}

// WriteTable writes the report as the table "mcpfsm status" prints: one
// line per server with its state, attempts, time in state and last cause.
func WriteTable(w io.Writer, r *StatusReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATE\tATTEMPTS\tSINCE\tCAUSE")
	for _, s := range r.Servers {
		since := "-"
		if !s.Since.IsZero() {
			since = r.Now.Sub(s.Since).Round(time.Second).String()
		}
		cause := s.LastError
		if cause == "" {
			cause = "-"
		}
		cause, _, _ = strings.Cut(cause, "\n")
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\t%s\n", s.Name, s.State, s.Attempt, s.MaxAttempts, since, cause)
	}
	return tw.Flush()
}
