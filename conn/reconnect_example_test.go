package conn_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os/exec"
	"sync/atomic"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An operator's "retry now": after a command that was not installed, the
// supervisor stops in failed-permanent and names the fix; once the command
// is installed, Reconnect brings the server back at once and returns nil.
func ExampleSupervisor_Reconnect() {
	ctx := context.Background()
	var installed atomic.Bool
	server := mcp.NewServer(&mcp.Implementation{Name: "demo", Version: "v1"}, nil)
	transport := conn.TransportFunc(func(ctx context.Context) (mcp.Transport, error) {
		if !installed.Load() { // what conn.Command reports for a missing program
			return nil, &exec.Error{Name: "demo-server", Err: exec.ErrNotFound}
		}
		client, srv := mcp.NewInMemoryTransports()
		if _, err := server.Connect(ctx, srv, nil); err != nil {
			return nil, err
		}
		return client, nil
	})
	p := policy.Default()
	p.InitialDelay = time.Millisecond // the confirming retry comes at once
	failed := make(chan conn.Transition, 1)
	sup, err := conn.Start(ctx, conn.Config{
		Name: "demo", Transport: transport, Registry: conn.NewRegistry(), Reconnect: &p,
		OnTransition: func(t conn.Transition) {
			if t.To == conn.FailedPermanent {
				failed <- t
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sup.Close(ctx)

	t := <-failed
	var pe *conn.PermanentError
	fmt.Println(errors.As(t.Err, &pe), pe.Fix)

	installed.Store(true) // the operator installs the command...
	err = sup.Reconnect(ctx)
	fmt.Println(err, sup.State())
	// Output:
	// true install the command or fix its path
	// <nil> established
}
