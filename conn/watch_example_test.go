package conn_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
)

// Following a supervisor from another goroutine. Unlike OnTransition, the
// reader may take its time: a reader that falls WatchBuffer transitions
// behind loses the oldest and learns how many from Dropped.
func ExampleSupervisor_Watch() {
	ctx := context.Background()
	srv := conntest.NewServer() // an in-process server that can crash on demand
	srv.AddEchoTool("echo")
	defer srv.Close()
	clk := clock.NewMock()
	p := policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: time.Second, MaxAttempts: 3}
	sup, err := conn.Start(ctx, conn.Config{
		Name: "fx", Transport: srv.Transport(), Registry: conn.NewRegistry(), Reconnect: &p,
		FailOnStartupError: true, Clock: clk, Logger: quiet(),
	})
	if err != nil {
		log.Fatal(err)
	}
	updates := sup.Watch(ctx)
	fmt.Println("now", sup.Status().State)

	srv.Crash()
	show(<-updates)
	clk.Add(time.Second) // the backoff elapses
	show(<-updates)
	show(<-updates)

	if err := sup.Close(ctx); err != nil {
		log.Fatal(err)
	}
	for t := range updates { // ends after the disposed transition
		show(t)
	}
	// Output:
	// now established
	// established -connection-lost-> lost-reconnecting (lost 0)
	// lost-reconnecting -backoff-elapsed-> connecting (lost 0)
	// connecting -connected-> established (lost 0)
	// established -dispose-> disposing (lost 0)
	// disposing -disposed-> disposed (lost 0)
}

func show(t conn.Transition) {
	fmt.Printf("%s -%s-> %s (lost %d)\n", t.From, t.Event, t.To, t.Dropped)
}
