package bench_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/front"
	"github.com/mcpfsm/mcpfsm/internal/stats"
)

// BenchmarkFrontCall times a tool call made through mcpfsm serve's front
// (a client session to the front, the front's routing, audit and
// isolation bookkeeping, the supervisor, the backend session) against the
// same call made directly on a session to the backend: the floor, over
// in-memory transports to one in-process server, on protocol 2025-11-25.
// Rounds interleave the two paths in random order; it reports the median
// ratio of the front's time to the direct call's, with a 95 % interval,
// and each path's mean time.
func BenchmarkFrontCall(b *testing.B) {
	ctx := context.Background()
	m := newMemServer(1)
	b.Cleanup(func() { m.drained(b) })
	ct, _, err := m.pipe()
	if err != nil {
		b.Fatal(err)
	}
	direct, err := floorClient().Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: conn.ClassicProtocolVersion})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = direct.Close() })

	reg := conn.NewRegistry()
	f := front.New(front.Options{Registry: reg, Logger: quiet()})
	sup, err := conn.Start(ctx, conn.Config{Name: "mem", Transport: m.transport(0), Registry: reg,
		FailOnStartupError: true, Logger: quiet(), Client: f.ClientOptionsFor("mem"), ClientMiddleware: f.ClientMiddlewareFor("mem"),
		ProtocolVersion: conn.ClassicProtocolVersion})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sup.Close(context.Background()) })
	fct, fst := mcp.NewInMemoryTransports()
	runCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- f.Run(runCtx, fst) }()
	b.Cleanup(func() { stop(); <-served })
	proxied, err := floorClient().Connect(ctx, fct, &mcp.ClientSessionOptions{ProtocolVersion: conn.ClassicProtocolVersion})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = proxied.Close() })
	public := conn.PublicToolName("mem", "echo")
	call := func(cs *mcp.ClientSession, name string) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: echoIn})
		if err != nil || res.IsError {
			b.Fatalf("call %s: %v %+v", name, err, res)
		}
	}
	call(direct, "echo")
	call(proxied, public) // the front has synced its tools

	const sdk, viaFront = 0, 1
	paths := [2]func(){func() { call(direct, "echo") }, func() { call(proxied, public) }}
	rng := rand.New(rand.NewPCG(7, 8))
	ratio := make([]float64, 0, b.N)
	var sum [2]time.Duration
	b.ResetTimer()
	for range b.N {
		order := [2]int{sdk, viaFront}
		if rng.IntN(2) == 1 {
			order = [2]int{viaFront, sdk}
		}
		var took [2]float64
		for _, k := range order {
			t0 := time.Now()
			paths[k]()
			d := time.Since(t0)
			took[k], sum[k] = float64(d), sum[k]+d
		}
		ratio = append(ratio, took[viaFront]/took[sdk])
	}
	b.StopTimer()
	stats.ReportMedianCI(b, "ratio", ratio)
	b.ReportMetric(float64(sum[sdk])/float64(b.N), "direct-ns")
	b.ReportMetric(float64(sum[viaFront])/float64(b.N), "front-ns")
}
