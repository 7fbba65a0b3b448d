package conn

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBackoffBelowTimerResolution: a backoff under immediateDelay starts
// the next attempt with no timer (the fake clock never moves), while one of
// immediateDelay waits on the clock as every longer one does.
func TestBackoffBelowTimerResolution(t *testing.T) {
	for _, c := range []struct {
		delay time.Duration
		timer bool
	}{{time.Nanosecond, false}, {immediateDelay - 1, false}, {immediateDelay, true}} {
		t.Run(c.delay.String(), func(t *testing.T) {
			srv := oneToolServer("fast")
			sessions := make(chan *mcp.ServerSession, 4)
			trans := make(chan Transition, 16)
			clk := clock.NewMock()
			p := policy.Policy{Enabled: true, InitialDelay: c.delay, MaxDelay: c.delay, MaxAttempts: 3}
			sup, err := Start(context.Background(), Config{
				Name: "fx", Registry: NewRegistry(), Clock: clk, Reconnect: &p, Logger: slog.New(slog.DiscardHandler),
				OnTransition: func(tr Transition) { trans <- tr },
				Transport:    memTransport(srv, sessions),
			})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := sup.Close(context.Background()); err != nil {
					t.Errorf("Close: %v", err)
				}
			}()
			expect := func(want State) { t.Helper(); expectTransition(t, trans, want) }
			expect(Established)
			_ = (<-sessions).Close()
			expect(LostReconnecting)
			if c.timer {
				// One trip through the loop: had the attempt started at
				// once, the state would have moved on by now.
				var armed bool
				done := make(chan struct{})
				sup.post(func() { armed = sup.retry != nil && sup.retry.timer != nil; close(done) })
				<-done
				if !armed || sup.State() != LostReconnecting {
					t.Fatalf("a %v backoff: timer armed %v, state %s; want a timer and %s", c.delay, armed, sup.State(), LostReconnecting)
				}
				clk.Add(c.delay)
			}
			expect(Connecting)
			expect(Established)
			<-sessions
		})
	}
}
