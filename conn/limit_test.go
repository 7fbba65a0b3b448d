package conn_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// With MaxConcurrentCalls 2, a third call waits for a slot: it is sent
// when one frees, and answered with a tool error naming the limit, never
// sent, when its caller gives up first.
func TestMaxConcurrentCalls(t *testing.T) {
	srv := conntest.NewServer()
	var arrived atomic.Int32
	entered := make(chan struct{}, 8)
	release := make(chan struct{})
	srv.MCP.AddTool(&mcp.Tool{Name: "slow", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			arrived.Add(1)
			entered <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	reg := conn.NewRegistry()
	rec := conntest.NewRecorder()
	sup, err := conn.Start(context.Background(), conn.Config{Name: "s", Transport: srv.Transport(), Registry: reg,
		Clock: clock.NewMock(), Logger: rec.Logger(), OnTransition: rec.OnTransition, MaxConcurrentCalls: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	defer sup.Close(context.Background())
	rec.Expect(t, 10*time.Second, conn.Established)
	tool, ok := reg.Lookup("mcp__s__slow")
	if !ok {
		t.Fatal("tool not registered")
	}
	results := make(chan *mcp.CallToolResult, 4)
	call := func(ctx context.Context) {
		res, err := tool.Call(ctx, map[string]any{})
		if err != nil {
			t.Errorf("call: %v", err)
		}
		results <- res
	}
	for range 2 {
		go call(context.Background())
		conntest.Receive(t, entered, 10*time.Second, "a call within the limit reaching the server")
	}

	// A third call whose caller gives up while both slots are taken.
	ctx, cancel := context.WithCancel(context.Background())
	go call(ctx)
	cancel()
	res := conntest.Receive(t, results, 10*time.Second, "the refused call's answer")
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || !strings.Contains(text, "maxConcurrentCalls") || !strings.Contains(text, "was not called") {
		t.Fatalf("call beyond the limit = %q (isError %v), want a tool error naming the limit", text, res.IsError)
	}
	if n := arrived.Load(); n != 2 {
		t.Fatalf("the server saw %d calls, want 2", n)
	}

	// A fourth waits, and is sent once a slot frees.
	go call(context.Background())
	release <- struct{}{}
	conntest.Receive(t, results, 10*time.Second, "the released call's answer")
	conntest.Receive(t, entered, 10*time.Second, "the waiting call reaching the server")
	close(release)
	for range 2 {
		if res := conntest.Receive(t, results, 10*time.Second, "an answer"); res.IsError {
			t.Fatalf("call within the limit answered %+v", res)
		}
	}
}
