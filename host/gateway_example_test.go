package host_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/mcpfsm/mcpfsm/access"
	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/front"
	"github.com/mcpfsm/mcpfsm/host"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A gateway like mcpfsm serve: a host supervises every server of a file,
// and a front serves all their tools as one MCP server over Streamable
// HTTP, behind a bearer token.
func Example_gateway() {
	path := filepath.Join(os.TempDir(), "mcpfsm-gateway.json")
	upstream := greeter() // an MCP server over HTTP, with a tool "greet"
	defer upstream.Close()
	_ = os.WriteFile(path, []byte(`{"mcpServers": {"greeter": {"url": "`+upstream.URL+`"}}}`), 0o600)
	defer os.Remove(path)

	cfg, err := config.Load(path, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	reg, cat := conn.NewRegistry(), conn.NewCatalog()
	var f *front.Front // the host starts each server with the front's client options
	h := host.New(host.Options{Path: path, Registry: reg, Catalog: cat,
		Configure: func(server string, c *conn.Config) { f.Configure(server, c) },
		OnApply:   func(host.Changes) { f.Update() }})
	f = front.New(front.Options{Registry: reg, Catalog: cat, Backends: h})
	rule, err := access.New(access.Config{Token: "example-token-4f9a8b7c6d5e"})
	if err != nil {
		fmt.Println(err)
		return
	}
	gateway := httptest.NewServer(rule.Wrap(f.HTTPHandler(front.HTTPOptions{HostChecked: true})))
	ctx, stop := context.WithCancel(context.Background())
	synced := make(chan struct{})
	go func() { defer close(synced); f.Sync(ctx) }() // every change of the tools reaches the clients
	_ = h.Start(ctx, cfg)                            // waits for the first attempts
	defer func() {
		gateway.Close()
		_ = f.Close(context.Background()) // the clients, then the servers
		_ = h.Close(context.Background())
		stop()
		<-synced
	}()

	// A client of the gateway sees the server's tools under its name.
	client := &http.Client{Transport: bearer("example-token-4f9a8b7c6d5e")}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: gateway.URL, HTTPClient: client}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cs.Close()
	tools, _ := cs.ListTools(ctx, nil)
	for _, t := range tools.Tools {
		fmt.Println(t.Name)
	}
	res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__greeter__greet", Arguments: map[string]any{"name": "gateway"}})
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// mcp__greeter__greet
	// hello, gateway
}

// greeter serves an MCP server with one tool, "greet", over Streamable
// HTTP.
func greeter() *httptest.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "greeter"}, nil)
	type in struct {
		Name string `json:"name"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "greet"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello, " + a.Name}}}, nil, nil
	})
	return httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
}

// bearer sends a bearer token with every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}
