package conn_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call made under WithInput sends the answers and the requestState
// with it, on either protocol; a call without sends none.
func TestInputReachesTheServer(t *testing.T) {
	for _, protocol := range []string{conn.ClassicProtocolVersion, conn.StatelessProtocolVersion} {
		t.Run(protocol, func(t *testing.T) {
			srv := conntest.NewServer()
			srv.MCP.AddTool(&mcp.Tool{Name: "input", InputSchema: map[string]any{"type": "object"}},
				func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					var keys []string
					for k := range req.Params.InputResponses {
						keys = append(keys, k)
					}
					slices.Sort(keys)
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(keys, " ", req.Params.RequestState)}}}, nil
				})
			reg := conn.NewRegistry()
			rec := conntest.NewRecorder()
			sup, err := conn.Start(context.Background(), conn.Config{Name: "m", Transport: srv.Transport(), Registry: reg,
				Clock: clock.NewMock(), Logger: rec.Logger(), OnTransition: rec.OnTransition, ProtocolVersion: protocol})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			defer sup.Close(context.Background())
			rec.Expect(t, 10*time.Second, conn.Established)
			tool, _ := reg.Lookup(conn.PublicToolName("m", "input"))
			answers := mcp.InputResponseMap{"user_name": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "a"}}}
			for _, tc := range []struct {
				ctx  context.Context
				want string
			}{
				{conn.WithInput(context.Background(), answers, "round-2"), "[user_name] round-2"},
				{context.Background(), "[] "},
			} {
				res, err := tool.Call(tc.ctx, map[string]any{})
				if err != nil {
					t.Fatal(err)
				}
				if got := res.Content[0].(*mcp.TextContent).Text; got != tc.want {
					t.Errorf("the server saw %q, want %q", got, tc.want)
				}
			}
		})
	}
}
