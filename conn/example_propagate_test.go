package conn_test

import (
	"context"
	"fmt"
	"log"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type requestIDKey struct{}

// A host carries its own context into every request to the server with
// Config.Propagate: here a request id from the caller's ctx, which the
// server reads in _meta (over HTTP it is also a header). Package tracing's
// Tracer.Propagate does the same with W3C trace context.
func ExampleConfig_propagate() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "srv"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint("the server saw request id ", req.Params.Meta["x-request-id"])}}}, nil, nil
	})
	transport, closeServer := inMemory(server)
	defer closeServer()
	reg := conn.NewRegistry()
	sup, err := conn.Start(ctx, conn.Config{
		Name: "srv", Transport: transport, Registry: reg, FailOnStartupError: true,
		Propagate: func(ctx context.Context, set func(key, value string)) {
			if id, ok := ctx.Value(requestIDKey{}).(string); ok {
				set("x-request-id", id)
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sup.Close(ctx)
	res, err := reg.Call(context.WithValue(ctx, requestIDKey{}, "r-42"), "mcp__srv__whoami", map[string]any{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output: the server saw request id r-42
}
