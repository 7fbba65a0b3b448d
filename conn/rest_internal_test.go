package conn

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestConnectionMachineRestsWhenIdle: an idle supervisor keeps its
// connection machine at rest (no looplab engine), and one whose attempt
// is in flight does not (the attempt's outcome would only build it
// again).
func TestConnectionMachineRestsWhenIdle(t *testing.T) {
	sessions := make(chan *mcp.ServerSession, 4)
	var opens atomic.Int32
	gate := make(chan struct{})
	inner := memTransport(oneToolServer("rest"), sessions)
	transport := TransportFunc(func(ctx context.Context) (mcp.Transport, error) {
		if opens.Add(1) == 2 {
			select { // the second attempt waits until the test lets it go
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return inner.Open(ctx)
	})
	trans := make(chan Transition, 16)
	p := policy.Policy{Enabled: true, InitialDelay: time.Nanosecond, MaxDelay: time.Nanosecond, MaxAttempts: 5}
	sup, err := Start(context.Background(), Config{Name: "fx", Registry: NewRegistry(), Transport: transport,
		Reconnect: &p, OnTransition: func(tr Transition) { trans <- tr }})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Close(context.Background())

	expectTransition(t, trans, Established)
	waitFor(t, "an established supervisor's machine at rest", sup.machine.Resting)

	_ = (<-sessions).Close() // connection lost; the next attempt waits at the gate
	expectTransition(t, trans, LostReconnecting)
	expectTransition(t, trans, Connecting)
	waitFor(t, "the loop idle with an attempt in flight", func() bool { return loopIdle(sup) })
	if sup.State() != Connecting || sup.machine.Resting() {
		t.Fatalf("idle in %s with an attempt in flight: resting %v; want connecting, not resting", sup.State(), sup.machine.Resting())
	}

	close(gate)
	expectTransition(t, trans, Established)
	waitFor(t, "the machine at rest again once re-established", sup.machine.Resting)
}
