package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// demoServerEnv makes the mcpfsm binary run as one of the demo's stdio
// servers instead of as the command: "flaky" or "broken".
const demoServerEnv = "MCPFSM_DEMO_SERVER"

// demoPIDLogEnv, if set, names a file each demo server appends its PID
// to, so tests can check that none outlives the demo.
const demoPIDLogEnv = "MCPFSM_DEMO_PIDLOG"

// flakyLife is how long a flaky demo server lives before it crashes.
const flakyLife = 2500 * time.Millisecond

// demoServer runs the demo server kind and returns the exit code.
func demoServer(kind string) int {
	if pl := os.Getenv(demoPIDLogEnv); pl != "" {
		if f, err := os.OpenFile(pl, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintln(f, os.Getpid())
			f.Close()
		}
	}
	switch kind {
	case "broken":
		fmt.Fprintln(os.Stderr, "demo server: DEMO_API_KEY is not set; exiting")
		return 1
	case "flaky":
		time.AfterFunc(flakyLife, func() {
			fmt.Fprintln(os.Stderr, "demo server: crashing")
			os.Exit(3) // a real crash: no goodbye on the protocol
		})
		srv := mcp.NewServer(&mcp.Implementation{Name: "mcpfsm-demo", Version: "v1"}, nil)
		mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "returns its text argument"},
			func(_ context.Context, _ *mcp.CallToolRequest, a struct {
				Text string `json:"text"`
			}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
			})
		if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "demo server:", err)
			return 2
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "mcpfsm: %s=%q: want flaky or broken\n", demoServerEnv, kind)
	return exitUsage
}
