package conn_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call made during an outage waits for the next connection with
// HoldCalls, instead of failing fast: it was never written to the dead
// server, so sending it to the new one cannot run the tool twice. The
// supervisor negotiated the newest protocol with this server.
func ExampleConfig_holdCalls() {
	ctx := context.Background()
	srv := conntest.NewServer()
	defer srv.Close()
	srv.AddEchoTool("echo")
	reg := conn.NewRegistry()
	sup, err := conn.Start(ctx, conn.Config{
		Name: "notes", Transport: srv.Transport(), Registry: reg,
		HoldCalls:          10 * time.Second,
		Reconnect:          &policy.Policy{Enabled: true, InitialDelay: time.Millisecond, MaxDelay: time.Millisecond, MaxAttempts: 3},
		FailOnStartupError: true, Logger: quiet(),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sup.Close(ctx)
	fmt.Println(sup.Status().Protocol)

	changes := sup.Watch(ctx)
	srv.Crash()
	for tr := range changes {
		if tr.To == conn.LostReconnecting {
			break
		}
	}
	res, err := reg.Call(ctx, "mcp__notes__echo", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// 2026-07-28
	// echo ok
}
