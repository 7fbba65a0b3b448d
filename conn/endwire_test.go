package conn_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
)

// goroutinesIn counts the goroutines whose stack holds frame.
func goroutinesIn(t *testing.T, frame string) int {
	t.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 2); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, frame) {
			n++
		}
	}
	return n
}

// An idle supervisor of a transport without a process keeps no goroutine
// waiting for its session's end: the wire around its connection sees the
// end (a failed read, or the SDK closing it), and a crash is still a loss.
func TestIdleSessionHoldsNoWaitingGoroutine(t *testing.T) {
	const n = 20
	clk := clock.NewMock()
	p := policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: time.Second, MaxAttempts: 3}
	srvs := make([]*conntest.Server, n)
	recs := make([]*conntest.Recorder, n)
	for i := range n {
		srvs[i], recs[i] = conntest.NewServer(), conntest.NewRecorder()
		srvs[i].AddEchoTool("echo")
		reg := conn.NewRegistry()
		startEstablished(t, srvs[i], recs[i], conn.Config{Reconnect: &p, Clock: clk, Registry: reg})
		// A call through each: the generations' goroutines have long
		// passed the point where they would start waiting.
		tool, ok := reg.Lookup(conn.PublicToolName("fx", "echo"))
		if !ok {
			t.Fatalf("supervisor %d: echo not registered", i)
		}
		if _, err := tool.Call(context.Background(), map[string]any{"text": "hi"}); err != nil {
			t.Fatalf("supervisor %d: call: %v", i, err)
		}
	}
	if got := goroutinesIn(t, "mcp.(*ClientSession).Wait("); got != 0 {
		t.Fatalf("%d goroutines wait in ClientSession.Wait for %d idle supervisors; want 0", got, n)
	}
	// The end is still seen: a crash is a loss, and the next attempt
	// re-establishes.
	srvs[0].Crash()
	recs[0].Expect(t, watchLimit, conn.LostReconnecting)
	clk.Add(time.Second)
	recs[0].Expect(t, watchLimit, conn.Connecting, conn.Established)
}

// An idle supervisor holds no goroutine of its own: its loop runs only
// while it has work. The loop's last goroutine may still be returning
// when the test looks, so the test waits (bounded) for none to be left;
// before the loop was started on demand, every supervisor held one.
func TestIdleSupervisorHoldsNoGoroutine(t *testing.T) {
	const n = 20
	clk := clock.NewMock()
	p := policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: time.Second, MaxAttempts: 3}
	srv, rec := conntest.NewServer(), conntest.NewRecorder()
	srv.AddEchoTool("echo")
	for range n {
		startEstablished(t, srv, rec, conn.Config{Reconnect: &p, Clock: clk})
	}
	const frame = "conn.(*Supervisor).loop("
	deadline := time.Now().Add(watchLimit)
	noLoopLeft := func(what string) {
		t.Helper()
		for goroutinesIn(t, frame) != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d loops still run %s after %v", goroutinesIn(t, frame), what, watchLimit)
			}
			runtime.Gosched()
		}
	}
	noLoopLeft(fmt.Sprintf("for %d idle supervisors", n))
	// In a backoff too: the timer, not a goroutine, holds the wait.
	srv.Crash()
	rec.Expect(t, watchLimit, conn.LostReconnecting)
	noLoopLeft("with a supervisor in a backoff")
	clk.Add(time.Second)
	rec.Expect(t, watchLimit, conn.Connecting, conn.Established)
}
