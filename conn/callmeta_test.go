package conn_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call made under WithCallMeta sends its _meta to the server.
func TestCallMetaReachesTheServer(t *testing.T) {
	srv := conntest.NewServer()
	srv.MCP.AddTool(&mcp.Tool{Name: "meta", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(req.Params.GetProgressToken())}}}, nil
		})
	reg := conn.NewRegistry()
	rec := conntest.NewRecorder()
	sup, err := conn.Start(context.Background(), conn.Config{Name: "m", Transport: srv.Transport(), Registry: reg,
		Clock: clock.NewMock(), Logger: rec.Logger(), OnTransition: rec.OnTransition})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	defer sup.Close(context.Background())
	rec.Expect(t, 10*time.Second, conn.Established)
	tool, _ := reg.Lookup("mcp__m__meta")
	for _, tc := range []struct {
		ctx  context.Context
		want string
	}{
		{conn.WithCallMeta(context.Background(), mcp.Meta{"progressToken": "tok-1"}), "tok-1"},
		{context.Background(), "<nil>"},
	} {
		res, err := tool.Call(tc.ctx, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; got != tc.want {
			t.Errorf("the server saw progress token %q, want %q", got, tc.want)
		}
	}
}

// The map given to WithCallMeta is the caller's: a call never changes
// it, though the SDK adds its own keys to the _meta it sends, so one map
// may serve concurrent calls.
func TestCallMetaIsNotChanged(t *testing.T) {
	srv := conntest.NewServer()
	srv.AddEchoTool("echo")
	reg := conn.NewRegistry()
	rec := conntest.NewRecorder()
	sup, err := conn.Start(context.Background(), conn.Config{Name: "m", Transport: srv.Transport(), Registry: reg,
		Clock: clock.NewMock(), Logger: rec.Logger(), OnTransition: rec.OnTransition})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	defer sup.Close(context.Background())
	rec.Expect(t, 10*time.Second, conn.Established)
	tool, _ := reg.Lookup("mcp__m__echo")
	own := mcp.Meta{"progressToken": "tok-1"}
	ctx := conn.WithCallMeta(context.Background(), own)
	done := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := tool.Call(ctx, map[string]any{"text": "x"})
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if len(own) != 1 || own["progressToken"] != "tok-1" {
		t.Errorf("the caller's _meta became %v", own)
	}
}
