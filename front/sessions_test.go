package front

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpFront serves a front with no servers over Streamable HTTP.
func httpFront(t *testing.T, o HTTPOptions) (*Front, string) {
	t.Helper()
	f := New(Options{Registry: conn.NewRegistry()})
	f.Update()
	hs := httptest.NewServer(f.HTTPHandler(o))
	t.Cleanup(hs.Close)
	return f, hs.URL
}

func connectHTTP(t *testing.T, url string) (*mcp.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil)
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: conn.ClassicProtocolVersion}) // sessions: 2025-11-25
	if err == nil {
		t.Cleanup(func() { _ = sess.Close() })
	}
	return sess, err
}

// A session whose client went away without DELETE ends after the idle
// timeout, and no longer counts.
func TestAbandonedSessionsEnd(t *testing.T) {
	f, url := httpFront(t, HTTPOptions{SessionTimeout: 50 * time.Millisecond})
	for range 3 {
		if _, err := connectHTTP(t, url); err != nil {
			t.Fatal(err)
		}
	}
	// The clients send nothing more: each session ends on its own timer.
	// A session is the front's once the request that made it is served,
	// which may end just after the client has its answer.
	eventually(t, "the adoption of every session", func() bool {
		for _, c := range f.all() {
			if c.session() == nil {
				return false
			}
		}
		return true
	})
	ended := make(chan struct{})
	n := 0
	for _, c := range f.all() {
		n++
		ss := c.session()
		go func() { _ = ss.Wait(); ended <- struct{}{} }()
	}
	if n != 3 {
		t.Fatalf("%d sessions served, want 3", n)
	}
	for range n {
		select {
		case <-ended:
		case <-time.After(limit):
			t.Fatalf("an idle session was still held %v after the 50ms idle timeout", limit)
		}
	}
	f.wait() // the ends are taken note of
	if got, _ := f.slots.Counts(); got != 0 {
		t.Fatalf("%d sessions still counted after they ended", got)
	}
}

// Beyond MaxSessions a new session is refused with 503 and Retry-After;
// the sessions already served go on.
func TestSessionLimit(t *testing.T) {
	_, url := httpFront(t, HTTPOptions{MaxSessions: 2, SessionTimeout: -1})
	var held []*mcp.ClientSession
	for range 2 {
		s, err := connectHTTP(t, url)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, s)
	}
	if _, err := connectHTTP(t, url); err == nil {
		t.Fatal("a third session was served with MaxSessions 2")
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a session beyond the limit got %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	for _, s := range held {
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		_, err := s.ListTools(ctx, nil)
		cancel()
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("a session within the limit failed: %v", err)
		}
	}
}
