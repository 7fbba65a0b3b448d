package metrics_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/metrics"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// benchPair is one in-process echo server supervised on the real clock,
// with a Metrics on the OpenTelemetry SDK (a ManualReader, so aggregation
// runs as in production) whose call hook can be switched off. Comparing
// one session with itself keeps differences between sessions out of the
// figure; what a switched-off hook still costs (conn's two clock reads and
// the classification) is in BenchmarkOnCall/hook.
type benchPair struct {
	reg       *conn.ToolRegistry
	recording atomic.Bool
}

func newBenchPair(b *testing.B) *benchPair {
	b.Helper()
	ctx := context.Background()
	srv := conntest.NewServer()
	srv.AddEchoTool("echo")
	b.Cleanup(srv.Close) // cleanups run last first: after the supervisor's Close
	_, m := newMetrics(b)
	p := &benchPair{reg: conn.NewRegistry()}
	sup, err := conn.Start(ctx, conn.Config{Name: "fx", Transport: srv.Transport(), Registry: p.reg,
		FailOnStartupError: true, Logger: slog.New(slog.DiscardHandler),
		OnTransition: m.TransitionObserver(),
		OnCall: func(r conn.CallRecord) {
			if p.recording.Load() {
				m.OnCall(r)
			}
		}})
	if err != nil {
		b.Fatal(err)
	}
	m.Track(sup)
	b.Cleanup(func() { closeSup(b, sup) })
	p.call(b, true)
	p.call(b, false)
	return p
}

func (p *benchPair) call(b *testing.B, record bool) {
	p.recording.Store(record)
	res, err := p.reg.Call(context.Background(), "mcp__fx__echo", nil)
	if err != nil || res.IsError {
		b.Fatalf("call: %v %+v", err, res)
	}
}

// BenchmarkCallPath measures what recording metrics adds to a tool call:
// "plain" and "metrics" alone, and "paired", which runs blocks of calls
// without recording, again without (a control: the noise floor of the
// run) and with recording, in rotating order in one loop. Blocks are timed
// in CPU time of the process where the system reports it (client and
// in-process server alike; wall time on a shared machine varies more than
// the effect). It reports the recorded calls' time as a ratio of the plain
// ones, over the whole run ("ratio") and as the median of the ratios of
// each round of blocks ("median-ratio", which load that comes and goes
// does not skew), and the same for the control. The target is a ratio of
// at most 1.01.
func BenchmarkCallPath(b *testing.B) {
	p := newBenchPair(b)
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p.call(b, false)
		}
	})
	b.Run("metrics", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p.call(b, true)
		}
	})
	b.Run("paired", func(b *testing.B) {
		const plain, control, measured = 0, 1, 2
		record := [3]bool{false, false, true}
		var took [3]time.Duration
		var ratios, controls []float64
		const block = 16
		b.ResetTimer()
		for i, left := 0, b.N; left > 0; i++ {
			n := min(block, left)
			left -= n
			var round [3]time.Duration
			for k := range 3 {
				j := (i + k) % 3 // rotate which path runs first
				t0 := cpuTime()
				for range n {
					p.call(b, record[j])
				}
				round[j] = cpuTime() - t0
				took[j] += round[j]
			}
			ratios = append(ratios, float64(round[measured])/float64(round[plain]))
			controls = append(controls, float64(round[control])/float64(round[plain]))
		}
		b.StopTimer()
		b.ReportMetric(median(ratios), "median-ratio")
		b.ReportMetric(float64(took[measured])/float64(took[plain]), "ratio")
		b.ReportMetric(median(controls), "control-median-ratio")
		b.ReportMetric(float64(took[control])/float64(took[plain]), "control-ratio")
		b.ReportMetric(float64(took[plain])/float64(b.N), "plain-cpu-ns")
		b.ReportMetric(float64(took[measured])/float64(b.N), "metrics-cpu-ns")
	})
}

func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// BenchmarkOnCall is the hook alone: recording one CallRecord into the
// SDK, the cost the measured call path adds.
func BenchmarkOnCall(b *testing.B) {
	s, m := newMetrics(b)
	ok := conn.CallRecord{Server: "fx", Tool: "mcp__fx__echo", RawTool: "echo", Duration: 3 * time.Millisecond, Outcome: conn.OutcomeOK}
	failed := ok
	// "hook" is all the work a measured call adds: what conn's call hook
	// does around the call (two clock reads, the record, the
	// classification) and the recording.
	b.Run("hook", func(b *testing.B) {
		b.ReportAllocs()
		clk := clock.New()
		res := &mcp.CallToolResult{}
		for b.Loop() {
			start := clk.Now()
			r := ok
			r.Start, r.Duration, r.Outcome = start, clk.Since(start), conn.ClassifyCall(res, nil)
			m.OnCall(r)
		}
	})
	// "instrumented" is the hook Metrics.Instrument installs, bound to
	// its server.
	b.Run("instrumented", func(b *testing.B) {
		b.ReportAllocs()
		on := m.Instrument(conn.Config{Name: "fx"}).OnCall
		for b.Loop() {
			on(ok)
		}
	})
	// "sdk-floor" is the SDK's Record alone, with the same attribute set
	// built once: what any recording through the OpenTelemetry API costs,
	// the part of "ok" that is not this package's.
	b.Run("sdk-floor", func(b *testing.B) {
		b.ReportAllocs()
		h, err := s.mp.Meter("floor").Float64Histogram("floor", metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300))
		if err != nil {
			b.Fatal(err)
		}
		opt := metric.WithAttributeSet(attribute.NewSet(
			attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", "echo"), attribute.String(metrics.KeyServer, "fx"),
			attribute.String(metrics.KeyCallOutcome, "ok")))
		ctx := context.Background()
		for b.Loop() {
			h.Record(ctx, ok.Duration.Seconds(), opt)
		}
	})
	failed.Outcome, failed.Err = conn.OutcomeError, fmt.Errorf("calling: %w", &jsonrpcError)
	for _, c := range []struct {
		name string
		rec  conn.CallRecord
	}{{"ok", ok}, {"error", failed}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m.OnCall(c.rec)
			}
		})
		b.Run(c.name+"-parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					m.OnCall(c.rec)
				}
			})
		})
	}
}
