//lint:file-ignore SA1019 roots and logging are deprecated upstream (SEP-2577) but still served, and tested.

package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addSession gives the server the features beyond tools that a host
// reaches through a supervisor (-session): a resource res://pid whose text
// is the process's PID, a template res://echo/{x}, a prompt greet, and
// tools that make the server call the client: ask (elicitation), roots
// (roots/list) and touch (notifies the subscribers of res://pid). Every
// subscription and roots change is logged to stderr as "testserver:
// subscribe URI" and "testserver: roots changed".
func addSession(opts *mcp.ServerOptions) func(*mcp.Server) {
	opts.SubscribeHandler = func(_ context.Context, req *mcp.SubscribeRequest) error {
		fmt.Fprintf(os.Stderr, "testserver: subscribe %s\n", req.Params.URI)
		return nil
	}
	opts.UnsubscribeHandler = func(context.Context, *mcp.UnsubscribeRequest) error { return nil }
	opts.RootsListChangedHandler = func(context.Context, *mcp.RootsListChangedRequest) {
		fmt.Fprintln(os.Stderr, "testserver: roots changed")
	}
	return func(srv *mcp.Server) {
		pid := fmt.Sprint(os.Getpid())
		srv.AddResource(&mcp.Resource{URI: "res://pid", Name: "pid", MIMEType: "text/plain"},
			func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: pid}}}, nil
			})
		srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "res://echo/{x}", Name: "echo"},
			func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: strings.TrimPrefix(req.Params.URI, "res://echo/")}}}, nil
			})
		srv.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello from " + pid}}}}, nil
		})
		// ask and roots ask for input as a 2026-07-28 server does, in the
		// call's result (input_required, SEP-2322); the SDK's server asks
		// a client of an older protocol itself, during the call.
		mcp.AddTool(srv, &mcp.Tool{Name: "ask", Description: "elicits a name and returns it"},
			func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				res, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult)
				if !ok {
					return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{
						"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}}, nil, nil
				}
				return text(fmt.Sprint(res.Action, " ", res.Content["name"])), nil, nil
			})
		mcp.AddTool(srv, &mcp.Tool{Name: "roots", Description: "returns the client's root URIs"},
			func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				res, ok := req.Params.InputResponses["roots"].(*mcp.ListRootsResult)
				if !ok {
					return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"roots": &mcp.ListRootsParams{}}}, nil, nil
				}
				var uris []string
				for _, r := range res.Roots {
					uris = append(uris, r.URI)
				}
				return text(strings.Join(uris, " ")), nil, nil
			})
		mcp.AddTool(srv, &mcp.Tool{Name: "touch", Description: "notifies the subscribers of res://pid"},
			func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				return text("touched"), nil, srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "res://pid"})
			})
	}
}
