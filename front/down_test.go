package front

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call of a tool of a configured server that never came up names the
// server, its state and its last error, not "unknown tool".
func TestCallOfADownServerSaysWhy(t *testing.T) {
	reg := conn.NewRegistry()
	srv := conntest.NewServer(conntest.Refuse)
	rec := conntest.NewRecorder()
	p := policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: 4 * time.Second, MaxAttempts: 3}
	sup, err := conn.Start(context.Background(), conn.Config{
		Name: "down", Transport: srv.Transport(), Registry: reg, Reconnect: &p, Clock: clock.NewMock(),
		Logger: rec.Logger(), OnTransition: rec.OnTransition,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	defer sup.Close(context.Background())
	rec.Expect(t, limit, conn.FailedRetrying)
	bs := newFakeBackends()
	bs.status = func(server string) (conn.Status, bool) {
		if server != "down" {
			return conn.Status{}, false
		}
		return sup.Status(), true
	}
	f := New(Options{Registry: reg, Backends: bs})
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.Run(ctx, st) }()
	defer func() { cancel(); <-served }()
	sess, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()

	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__down__read"})
	if err != nil {
		t.Fatalf("call of a down server's tool: %v, want a tool error", err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	for _, want := range []string{`server "down"`, "connection failed; retrying", `tool "mcp__down__read" was not called`, "last error:"} {
		if !res.IsError || !strings.Contains(text, want) {
			t.Errorf("answer %q (isError %v) does not say %q", text, res.IsError, want)
		}
	}
	// A server nobody configured still has unknown tools.
	if _, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__nobody__read"}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("call of an unconfigured server's tool: %v, want unknown tool", err)
	}
}

// A configured secret in a server's last error never reaches a client:
// Options.Redact hides it in the outage message.
func TestOutageMessagesHideSecrets(t *testing.T) {
	const secret = "supersecret-env-value-123"
	bs := newFakeBackends()
	bs.status = func(server string) (conn.Status, bool) {
		return conn.Status{State: conn.FailedRetrying, Attempt: 1, MaxAttempts: 3,
			LastErr: errors.New("exited; stderr: API_TOKEN=" + secret)}, true
	}
	f := New(Options{Registry: conn.NewRegistry(), Backends: bs,
		Redact: func(s string) string { return strings.ReplaceAll(s, secret, "[redacted fs.env.API_TOKEN]") }})
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.Run(ctx, st) }()
	defer func() { cancel(); <-served }()
	sess, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fs__read"})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if strings.Contains(text, secret) || !strings.Contains(text, "[redacted fs.env.API_TOKEN]") {
		t.Errorf("the outage message %q shows the secret, or does not say it hid it", text)
	}
}
