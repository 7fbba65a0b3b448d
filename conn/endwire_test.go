package conn_test

import (
	"bytes"
	"context"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
)

// waitingInSessionWait counts the goroutines blocked in the SDK's
// ClientSession.Wait.
func waitingInSessionWait(t *testing.T) int {
	t.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 2); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, "mcp.(*ClientSession).Wait(") {
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
	if got := waitingInSessionWait(t); got != 0 {
		t.Fatalf("%d goroutines wait in ClientSession.Wait for %d idle supervisors; want 0", got, n)
	}
	// The end is still seen: a crash is a loss, and the next attempt
	// re-establishes.
	srvs[0].Crash()
	recs[0].Expect(t, watchLimit, conn.LostReconnecting)
	clk.Add(time.Second)
	recs[0].Expect(t, watchLimit, conn.Connecting, conn.Established)
}
