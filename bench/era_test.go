package bench_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/mcpfsm/mcpfsm/internal/stats"
)

// eraPath is one way a call of one era reaches the echo tool: a client
// of that era (a session and an HTTP transport of its own) of an arm.
type eraPath struct {
	name  string
	era   string // the client's protocol version
	floor int    // the index of its era's floor among the paths
	c     *client
}

// dialEra connects a client of protocol era to url, without credentials.
func dialEra(ctx context.Context, url, era string) (*client, error) {
	c := &client{tr: http.DefaultTransport.(*http.Transport).Clone()}
	sess, err := floorClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: c.tr}},
		&mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		c.tr.CloseIdleConnections()
		return nil, err
	}
	c.sess = sess
	return c, nil
}

// BenchmarkServeEras times one client's echo call over real loopback
// sockets on each protocol era, through mcpfsm serve (-unauthenticated,
// a stdio backend, per-client and shared isolation) and against its
// floor, the bare SDK doing the same call: the fixture serving
// Streamable HTTP itself, stateful for a 2025-11-25 client, stateless for
// a 2026-07-28 one (the only way go-sdk serves that era over HTTP). A
// round calls once on every path, in an order drawn at random; it
// reports each path's p50, its ratio to its era's floor, and the median
// of the rounds' ratios with a 95 % interval.
func BenchmarkServeEras(b *testing.B) {
	fix, bin := fixture.Build(b), fixture.BuildHost(b)
	classicFloor := startArm(b, armSpec{name: "floor"})
	p := startProc(b, "testserver: listening ", nil, fix, "-http", "-stateless")
	modernFloor := &arm{armSpec: armSpec{name: "floor-stateless"}, url: p.url, procs: []*proc{p}}
	perClient := startArm(b, armSpec{name: "per-client", bin: bin, isolation: "per-client"})
	shared := startArm(b, armSpec{name: "shared", bin: bin, isolation: "shared"})
	const classic, modern = conn.ClassicProtocolVersion, conn.StatelessProtocolVersion
	paths := []*eraPath{
		{name: "floor-2025", era: classic, floor: 0},
		{name: "floor-2026", era: modern, floor: 1},
		{name: "per-client-2025", era: classic, floor: 0},
		{name: "per-client-2026", era: modern, floor: 1},
		{name: "shared-2025", era: classic, floor: 0},
		{name: "shared-2026", era: modern, floor: 1},
	}
	arms := []*arm{classicFloor, modernFloor, perClient, perClient, shared, shared}
	ctx := context.Background()
	for i, path := range paths {
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		c, err := dialEra(wctx, arms[i].url, path.era)
		cancel()
		if err != nil {
			arms[i].fatalf(b, "%s: connect: %v", path.name, err)
		}
		b.Cleanup(func() { _ = c.close() })
		path.c = c
		for range 20 { // start the instance, warm both ends
			if err := c.call(ctx); err != nil {
				arms[i].fatalf(b, "%s: %v", path.name, err)
			}
		}
	}
	rng := rand.New(rand.NewPCG(39, 2026))
	took := make([][]time.Duration, len(paths))
	ratio := make([][]float64, len(paths))
	round := make([]time.Duration, len(paths))
	b.ResetTimer()
	for range b.N {
		for _, k := range rng.Perm(len(paths)) {
			t0 := time.Now()
			if err := paths[k].c.call(ctx); err != nil {
				arms[k].fatalf(b, "%s: %v", paths[k].name, err)
			}
			round[k] = time.Since(t0)
			took[k] = append(took[k], round[k])
		}
		for k, path := range paths {
			if k != path.floor {
				ratio[k] = append(ratio[k], float64(round[k])/float64(round[path.floor]))
			}
		}
	}
	b.StopTimer()
	for k, path := range paths {
		p50 := quantile(took[k], 0.5)
		b.ReportMetric(ms(p50), path.name+"-p50-ms")
		if k != path.floor {
			b.ReportMetric(float64(p50)/float64(quantile(took[path.floor], 0.5)), path.name+"-p50-x")
			stats.ReportMedianCI(b, path.name+"-x", ratio[k])
		}
	}
}
