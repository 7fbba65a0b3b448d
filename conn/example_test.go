package conn_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A stdio server supervised with the ready-made registry. The supervisor
// respawns the server when it dies and keeps its tools registered under
// stable public names.
func ExampleCommand() {
	ctx := context.Background()
	reg := conn.NewRegistry()
	sup, err := conn.Start(ctx, conn.Config{
		Name:      "everything",
		Transport: conn.Command("npx", "-y", "@modelcontextprotocol/server-everything", "stdio"),
		Registry:  reg,
		// Reconnect: nil means policy.Default(): 10 attempts per outage,
		// 500ms doubling to 30s.
	})
	if err != nil {
		log.Fatal(err) // only invalid configuration fails here
	}
	defer sup.Close(ctx)
	if err := sup.Ready(ctx); err != nil {
		log.Printf("not up yet, retrying in the background: %v", err)
	}
	res, err := reg.Call(ctx, "mcp__everything__echo", map[string]any{"message": "hi"})
	if err != nil {
		log.Print(err) // errors.Is(err, conn.ErrUnavailable) during an outage
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
}

// A Streamable HTTP server. A session the server forgets (it restarted)
// ends the generation, and the supervisor opens a new session.
func ExampleStreamable() {
	ctx := context.Background()
	reg := conn.NewRegistry()
	sup, err := conn.Start(ctx, conn.Config{
		Name:      "remote",
		Transport: conn.Streamable("https://mcp.example.com/mcp"),
		Registry:  reg,
		KeepAlive: 30 * time.Second, // notice a silently dead server between calls
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sup.Close(ctx)
	for _, t := range reg.Tools() {
		fmt.Println(t.Name)
	}
}

// An in-process server over the SDK's in-memory transports: how tests and
// embedded servers use TransportFunc.
func ExampleStart() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "greeter"}, nil)
	server.AddTool(&mcp.Tool{Name: "greet", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil
		})
	var serverSessions []*mcp.ServerSession
	transport := conn.TransportFunc(func(ctx context.Context) (mcp.Transport, error) {
		client, srv := mcp.NewInMemoryTransports()
		ss, err := server.Connect(ctx, srv, nil)
		serverSessions = append(serverSessions, ss)
		return client, err
	})
	reg := conn.NewRegistry()
	p := policy.Default()
	p.InitialDelay = 10 * time.Millisecond
	sup, err := conn.Start(ctx, conn.Config{
		Name:               "greeter",
		Transport:          transport,
		Registry:           reg,
		Reconnect:          &p,
		FailOnStartupError: true, // Start returns once the tools are registered
		OnTransition: func(t conn.Transition) {
			fmt.Printf("%s -> %s\n", t.From, t.To)
		},
		Logger: quiet(),
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range reg.Tools() {
		fmt.Println(t.Name)
	}
	res, err := reg.Call(ctx, "mcp__greeter__greet", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	if err := sup.Close(ctx); err != nil {
		log.Fatal(err)
	}
	for _, ss := range serverSessions {
		ss.Close()
	}
	fmt.Println(len(reg.Tools()), "tools after Close")
	// Output:
	// connecting -> established
	// mcp__greeter__greet
	// hello
	// established -> disposing
	// disposing -> disposed
	// 0 tools after Close
}

func ExamplePublicToolName() {
	fmt.Println(conn.PublicToolName("fs", "read_file"))
	fmt.Println(conn.PublicToolName("fs", "read file"))
	// Output:
	// mcp__fs__read_file
	// mcp__fs__read_file_fe5680de441b
}
