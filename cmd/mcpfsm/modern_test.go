package main

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// modernClientOptions accept every elicitation and record its message.
func modernClientOptions(asked chan<- string) *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- req.Params.Message
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirmed": true}}, nil
		},
	}
}

// awaitModernTools lists serve's tools until the remote server's are
// there.
func awaitModernTools(t *testing.T, fc *frontClient, stderr *watcher) {
	t.Helper()
	deadline := time.After(limit)
	for {
		for _, name := range fc.tools(t) {
			if name == "mcp__modern__echo" {
				return
			}
		}
		select {
		case <-fc.changes:
		case <-deadline:
			t.Fatalf("serve never listed the 2026-07-28-only server's tools; stderr:\n%s", stderr)
		}
	}
}

// callModern calls the remote server's echo and ask through fc: echo
// answers, and ask's input request reaches the classic client as an
// elicitation, whose answer completes the call.
func callModern(t *testing.T, fc *frontClient, asked <-chan string, stderr *watcher) {
	t.Helper()
	if text, isErr := fc.call(t, "mcp__modern__echo", "hi"); isErr || text != "hi" {
		t.Fatalf("echo = %q (isError %v), want hi; stderr:\n%s", text, isErr, stderr)
	}
	if text, isErr := fc.call(t, "mcp__modern__ask", ""); isErr || text != "confirmed: accept" {
		t.Fatalf("ask = %q (isError %v), want %q; stderr:\n%s", text, isErr, "confirmed: accept", stderr)
	}
	select {
	case msg := <-asked:
		if msg != "Proceed?" {
			t.Errorf("elicitation message %q, want the server's %q", msg, "Proceed?")
		}
	default:
		t.Error("ask completed without asking the client")
	}
}

// TestServeModernOnlyRemoteServer: a remote server of protocol 2026-07-28
// only, which refuses the classic initialize handshake, is reached
// through serve by classic clients without a protocolVersion in the
// config: over stdio (serve's one instance of it) and by a 2025-11-25
// Streamable HTTP session (its shared instance). Each instance learns the
// stateless protocol within its first attempt (one refused initialize,
// no failed attempt), the server's input request reaches the classic
// client as an elicitation, and a 2026-07-28 client of the same serve is
// served by the same instance (no second server/discover). On the old
// code the instance was pinned to the classic handshake and never came
// up.
func TestServeModernOnlyRemoteServer(t *testing.T) {
	t.Run("stdio", func(t *testing.T) {
		ms := fixture.NewModernServer(t)
		cfg := writeConfig(t, obj{"mcpServers": obj{"modern": obj{"type": "http", "url": ms.URL}}})
		asked := make(chan string, 4)
		cmd, stderr, fc := serveStdioProcessWith(t, nil, modernClientOptions(asked),
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}, "serve", "-config", cfg)
		awaitModernTools(t, fc, stderr)
		callModern(t, fc, asked, stderr)
		if n := ms.Requests("initialize"); n != 1 {
			t.Errorf("%d initialize requests, want 1 (refused once, then learnt)", n)
		}
		if strings.Contains(stderr.String(), "connection attempt failed") {
			t.Errorf("the fallback was a failed attempt; stderr:\n%s", stderr)
		}
		_ = fc.sess.Close()
		if code := wait(t, cmd, stderr); code != 0 {
			t.Errorf("mcpfsm serve: exit %d, stderr:\n%s", code, stderr)
		}
	})
	for _, isolation := range []string{"shared", "per-client"} {
		t.Run("http "+isolation, func(t *testing.T) { testServeModernOnlyOverHTTP(t, isolation) })
	}
}

// testServeModernOnlyOverHTTP: a 2025-11-25 session and then a
// 2026-07-28 one reach the 2026-07-28-only server through serve -listen,
// the server shared or per client. Shared, the shared instance learns the
// protocol (one refused initialize) and serves both clients (no second
// server/discover); per client, the classic client's own instance learns
// it too, and the 2026-07-28 client's asks for it at once.
func testServeModernOnlyOverHTTP(t *testing.T, isolation string) {
	ms := fixture.NewModernServer(t)
	cfg := writeConfig(t, obj{"mcpServers": obj{"modern": obj{"type": "http", "url": ms.URL, "isolation": isolation}}})
	cmd, stderr, url := serveHTTPProcess(t, cfg)
	asked := make(chan string, 4)
	fc := connectWith(t, &mcp.StreamableClientTransport{Endpoint: url}, modernClientOptions(asked),
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	awaitModernTools(t, fc, stderr)
	callModern(t, fc, asked, stderr)
	_ = fc.sess.Close()
	initializes, discovers := ms.Requests("initialize"), ms.Requests("server/discover")
	want := 1
	if isolation == "per-client" {
		want = 2 // the shared instance's and the client's own
	}
	if initializes != want {
		t.Errorf("%d initialize requests, want %d (each classic instance refused once, then learnt)", initializes, want)
	}

	modern := connectWith(t, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{}},
		modernClientOptions(asked), &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if text, isErr := modern.call(t, "mcp__modern__echo", "again"); isErr || text != "again" {
		t.Fatalf("a 2026-07-28 client's echo = %q (isError %v); stderr:\n%s", text, isErr, stderr)
	}
	if n := ms.Requests("initialize"); n != initializes {
		t.Errorf("%d initialize requests after a 2026-07-28 client's call, want %d", n, initializes)
	}
	if n := ms.Requests("server/discover"); isolation == "shared" && n != discovers {
		t.Errorf("server/discover requests %d after a 2026-07-28 client's call, want %d: a second shared instance was started", n, discovers)
	}
	if strings.Contains(stderr.String(), "connection attempt failed") {
		t.Errorf("the fallback was a failed attempt; stderr:\n%s", stderr)
	}
	_ = modern.sess.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(t, cmd, stderr); code != 0 {
		t.Errorf("mcpfsm serve: exit %d, stderr:\n%s", code, stderr)
	}
}
