package metrics_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchPair is one in-process echo server supervised twice on the real
// clock: once plainly and once measured by a Metrics on the OpenTelemetry
// SDK (a ManualReader, so aggregation runs as in production).
type benchPair struct {
	plain, measured *conn.ToolRegistry
}

func newBenchPair(b *testing.B) *benchPair {
	b.Helper()
	ctx := context.Background()
	srv := conntest.NewServer()
	srv.AddEchoTool("echo")
	_, m := newMetrics(b)
	p := &benchPair{plain: conn.NewRegistry(), measured: conn.NewRegistry()}
	quiet := slog.New(slog.DiscardHandler)
	plain, err := conn.Start(ctx, conn.Config{Name: "fx", Transport: srv.Transport(), Registry: p.plain,
		FailOnStartupError: true, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	measured, err := m.Start(ctx, conn.Config{Name: "fx", Transport: srv.Transport(), Registry: p.measured,
		FailOnStartupError: true, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		closeSup(b, plain)
		closeSup(b, measured)
		srv.Close()
	})
	p.call(b, p.plain)
	p.call(b, p.measured)
	return p
}

func (p *benchPair) call(b *testing.B, reg *conn.ToolRegistry) {
	res, err := reg.Call(context.Background(), "mcp__fx__echo", nil)
	if err != nil || res.IsError {
		b.Fatalf("call: %v %+v", err, res)
	}
}

// BenchmarkCallPath measures what the metrics hook adds to a tool call:
// "plain" and "metrics" alone, and "paired", which runs blocks of both in
// alternating order in one loop and reports the measured path's time as a
// ratio of the plain one, over the whole run ("ratio") and as the median of
// the ratios of each pair of blocks ("median-ratio", which load that comes
// and goes does not skew). The target is at most 1.01.
func BenchmarkCallPath(b *testing.B) {
	p := newBenchPair(b)
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p.call(b, p.plain)
		}
	})
	b.Run("metrics", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p.call(b, p.measured)
		}
	})
	b.Run("paired", func(b *testing.B) {
		regs := [2]*conn.ToolRegistry{p.plain, p.measured}
		var took [2]time.Duration
		var ratios []float64 // per block pair: robust to load that comes and goes
		const block = 16
		b.ResetTimer()
		for i, left := 0, b.N; left > 0; i++ {
			n := min(block, left)
			left -= n
			var pair [2]time.Duration
			for k := range 2 {
				j := (i + k) % 2 // alternate which path runs first
				t0 := time.Now()
				for range n {
					p.call(b, regs[j])
				}
				pair[j] = time.Since(t0)
			}
			took[0] += pair[0]
			took[1] += pair[1]
			ratios = append(ratios, float64(pair[1])/float64(pair[0]))
		}
		b.StopTimer()
		slices.Sort(ratios)
		b.ReportMetric(ratios[len(ratios)/2], "median-ratio")
		b.ReportMetric(float64(took[1])/float64(took[0]), "ratio")
		b.ReportMetric(float64(took[0])/float64(b.N), "plain-ns")
		b.ReportMetric(float64(took[1])/float64(b.N), "metrics-ns")
	})
}

// BenchmarkOnCall is the hook alone: recording one CallRecord into the
// SDK, the cost the measured call path adds.
func BenchmarkOnCall(b *testing.B) {
	_, m := newMetrics(b)
	ok := conn.CallRecord{Server: "fx", Tool: "mcp__fx__echo", RawTool: "echo", Duration: 3 * time.Millisecond, Outcome: conn.OutcomeOK}
	failed := ok
	failed.Outcome, failed.Err = conn.OutcomeError, errors.New("boom")
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
