package bench_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/mcpfsm/mcpfsm/internal/stats"
)

// callPair is one in-process echo server reached three ways: by a bare SDK
// session (the floor), by a second bare session (the control: two arms
// alike, whose ratio shows the benchmark's resolution) and through a
// supervisor and its registry.
type callPair struct {
	direct, ctl *mcp.ClientSession
	bounded     *mcp.ClientSession // a third bare session, for latency's deadline-bounded path
	reg         *conn.ToolRegistry
	name        string // echo's public name
}

func newCallPair(b *testing.B) *callPair {
	b.Helper()
	ctx := context.Background()
	m := newMemServer(1)
	b.Cleanup(func() { m.drained(b) }) // runs last
	bare := func() *mcp.ClientSession {
		ct, _, err := m.pipe()
		if err != nil {
			b.Fatal(err)
		}
		cs, err := floorClient().
			Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: conn.DefaultProtocolVersion})
		if err != nil {
			b.Fatalf("connect: %v", err)
		}
		// The supervisor lists the tools; so does the floor, so both
		// sessions hold the same state.
		if _, err := cs.ListTools(ctx, nil); err != nil {
			b.Fatalf("list tools: %v", err)
		}
		b.Cleanup(func() {
			if err := cs.Close(); err != nil {
				b.Errorf("close session: %v", err)
			}
		})
		return cs
	}
	p := &callPair{direct: bare(), ctl: bare(), bounded: bare(), reg: conn.NewRegistry(), name: conn.PublicToolName("mem", "echo")}
	sup, err := conn.Start(ctx, conn.Config{
		Name: "mem", Transport: m.transport(0), Registry: p.reg, FailOnStartupError: true, Logger: quiet(),
	})
	if err != nil {
		b.Fatalf("Start: %v", err)
	}
	// Warm every path, so that with -benchtime 1x none pays for the
	// first call's one-time work alone.
	p.callDirect(b, ctx)
	p.callCtl(b, ctx)
	p.callBounded(b, ctx)
	p.callRegistry(b, ctx)
	b.Cleanup(func() { closeAll(b, []*conn.Supervisor{sup}) })
	return p
}

func (p *callPair) callDirect(b *testing.B, ctx context.Context) { p.callBare(b, ctx, p.direct) }

func (p *callPair) callCtl(b *testing.B, ctx context.Context) { p.callBare(b, ctx, p.ctl) }

// callBounded is callDeadline on a session of its own, so that in a round
// of latency every session makes one call.
func (p *callPair) callBounded(b *testing.B, ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, conn.DefaultCallTimeout)
	defer cancel()
	p.callBare(b, ctx, p.bounded)
}

func (p *callPair) callBare(b *testing.B, ctx context.Context, cs *mcp.ClientSession) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: echoIn})
	if err != nil || res.IsError {
		b.Fatalf("direct call: %v %+v", err, res)
	}
}

// callDeadline is the direct call bounded the way conn bounds every call:
// under its own context.WithTimeout. It separates what any per-call
// deadline costs (in the context package and in the SDK, which watches a
// cancellable context) from what conn adds beyond it.
func (p *callPair) callDeadline(b *testing.B, ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, conn.DefaultCallTimeout)
	defer cancel()
	p.callDirect(b, ctx)
}

func (p *callPair) callRegistry(b *testing.B, ctx context.Context) {
	res, err := p.reg.Call(ctx, p.name, echoIn)
	if err != nil || res.IsError {
		b.Fatalf("registry call: %v %+v", err, res)
	}
}

// pairedBlocks runs b.N calls of each path, in blocks of 64 in rotating
// order (so that no path always runs first or last), each path warmed once
// outside the counts, and returns each path's total time and allocations.
func pairedBlocks(b *testing.B, paths ...func()) (took []time.Duration, allocs []uint64) {
	const block = 64
	took, allocs = make([]time.Duration, len(paths)), make([]uint64, len(paths))
	var ms runtime.MemStats
	for _, call := range paths {
		call()
	}
	b.ResetTimer()
	for i, left := 0, b.N; left > 0; i++ {
		n := min(block, left)
		left -= n
		for k := range paths {
			j := (i + k) % len(paths)
			runtime.ReadMemStats(&ms)
			a0, t0 := ms.Mallocs, time.Now()
			for range n {
				paths[j]()
			}
			took[j] += time.Since(t0)
			runtime.ReadMemStats(&ms)
			allocs[j] += ms.Mallocs - a0
		}
	}
	b.StopTimer()
	return took, allocs
}

// BenchmarkCallOverhead compares a tool call through conn.ToolRegistry.Call
// with the same call made directly on an SDK session, both over in-memory
// transports to one in-process server. "direct" and "registry" are the two
// alone; "direct-deadline" is the direct call under its own
// context.WithTimeout, as conn bounds every call. "paired" runs blocks of
// all three in rotating order in one loop and reports the registry's time
// ratio and extra allocations per call against the direct call (the
// targets) and against the deadline-bounded one.
func BenchmarkCallOverhead(b *testing.B) {
	ctx := context.Background()
	p := newCallPair(b)
	for _, c := range []struct {
		name string
		call func(*testing.B, context.Context)
	}{{"direct", p.callDirect}, {"direct-deadline", p.callDeadline}, {"registry", p.callRegistry}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.call(b, ctx)
			}
		})
	}
	b.Run("paired", func(b *testing.B) {
		b.ReportAllocs()
		took, allocs := pairedBlocks(b,
			func() { p.callDirect(b, ctx) }, func() { p.callBounded(b, ctx) }, func() { p.callRegistry(b, ctx) })
		n := float64(b.N)
		const direct, deadline, registry = 0, 1, 2
		b.ReportMetric(float64(took[registry])/float64(took[direct]), "ratio")
		b.ReportMetric((float64(allocs[registry])-float64(allocs[direct]))/n, "extra-allocs")
		b.ReportMetric(float64(took[registry])/float64(took[deadline]), "ratio-vs-deadline")
		b.ReportMetric((float64(allocs[registry])-float64(allocs[deadline]))/n, "extra-allocs-vs-deadline")
		b.ReportMetric(float64(took[direct])/n, "direct-ns")
		b.ReportMetric(float64(took[registry])/n, "registry-ns")
	})
	// latency interleaves the paths round by round, in an order drawn at
	// random for each round, and times each path's turn in wall time: the
	// turns of a round share the state of the host, which varies far more
	// from block to block than the effect. A turn is one call
	// ("block=1": every session is as cold as the others when its turn
	// comes) or eight in a row ("block=8", as a host calling one server
	// several times). For each round it takes the registry's time over
	// the direct call's ("ratio"), over the deadline-bounded one's
	// ("ratio-vs-deadline", on a session of its own) and the control's (a
	// second bare session to the same server: two paths alike) over the
	// direct call's ("ctl-ratio", the resolution), and reports their
	// medians over the run with the bounds of a 95 % confidence interval
	// ("-lo", "-hi"). The median of a ratio of two paths alike is 1; a
	// mean of such ratios would not be.
	for _, block := range []int{1, 8} {
		b.Run(fmt.Sprintf("latency/block=%d", block), func(b *testing.B) { latencyRounds(b, p, block) })
	}
}

// latencyRounds is BenchmarkCallOverhead/latency with block calls per turn.
func latencyRounds(b *testing.B, p *callPair, block int) {
	ctx := context.Background()

	const direct, deadline, registry, ctl, paths = 0, 1, 2, 3, 4
	call := [paths]func(){
		func() { p.callDirect(b, ctx) }, func() { p.callBounded(b, ctx) },
		func() { p.callRegistry(b, ctx) }, func() { p.callCtl(b, ctx) },
	}
	rng := rand.New(rand.NewPCG(5, 6))
	order := [paths]int{direct, deadline, registry, ctl}
	var sum [paths]time.Duration
	ratio, vsDeadline, ctlRatio := make([]float64, 0, b.N), make([]float64, 0, b.N), make([]float64, 0, b.N)
	b.ResetTimer()
	for range b.N {
		rng.Shuffle(paths, func(i, j int) { order[i], order[j] = order[j], order[i] })
		var took [paths]float64
		for _, k := range order {
			t0 := time.Now()
			for range block {
				call[k]()
			}
			d := time.Since(t0)
			took[k] = float64(d)
			sum[k] += d
		}
		ratio = append(ratio, took[registry]/took[direct])
		vsDeadline = append(vsDeadline, took[registry]/took[deadline])
		ctlRatio = append(ctlRatio, took[ctl]/took[direct])
	}
	b.StopTimer()
	stats.ReportMedianCI(b, "ratio", ratio)
	stats.ReportMedianCI(b, "ratio-vs-deadline", vsDeadline)
	stats.ReportMedianCI(b, "ctl-ratio", ctlRatio)
	b.ReportMetric(float64(sum[direct])/float64(b.N*block), "direct-ns")
	b.ReportMetric(float64(sum[registry])/float64(b.N*block), "registry-ns")
}

// BenchmarkCallOverheadStdio is BenchmarkCallOverhead/paired against the
// fixture server as a real process over stdio: a bare SDK session over
// mcp.CommandTransport and a supervisor over conn.Command, each with a
// process of its own. With the server out of the process, the allocations
// counted are the client side's alone. It reports the registry's time
// ratio and extra allocations per call against the direct call, and the
// direct call's own allocations.
func BenchmarkCallOverheadStdio(b *testing.B) {
	ctx := context.Background()
	bin := fixture.Build(b)
	bare := startBareStdio(b, bin, 1)
	defer closeBareStdio(bare)
	f := startStdioFleet(b, bin, 1, nil)
	defer closeAll(b, f.sups)
	direct := func() {
		res, err := bare[0].cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: echoIn})
		checkEcho(b, res, err)
	}
	registry := func() {
		res, err := f.reg.Call(ctx, f.names[0], echoIn)
		checkEcho(b, res, err)
	}
	took, allocs := pairedBlocks(b, direct, registry)
	n := float64(b.N)
	b.ReportMetric(float64(took[1])/float64(took[0]), "ratio")
	b.ReportMetric((float64(allocs[1])-float64(allocs[0]))/n, "extra-allocs")
	b.ReportMetric(float64(allocs[0])/n, "direct-allocs")
	b.ReportMetric(float64(took[0])/n, "direct-ns")
	b.ReportMetric(float64(took[1])/n, "registry-ns")
}
