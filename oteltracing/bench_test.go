package oteltracing_test

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/internal/stats"
	"github.com/mcpfsm/mcpfsm/oteltracing"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// discard is a span exporter that drops what it is given: the cost of a
// span up to the exporter, without the network.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// onTracer is a Tracer as FromEnv makes it (batched, every span sampled)
// with spans dropped at the exporter.
func onTracer(b *testing.B) *oteltracing.Tracer {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(discard{}))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return oteltracing.New(tp)
}

var clientMeta = map[string]any{"traceparent": clientTP, "progressToken": 1}

// front is what a front does with the tracer for one tools/call: the
// request span, the call span, call, both ends.
func front(ctx context.Context, tr *oteltracing.Tracer, call func(context.Context) error) error {
	ctx, rs := tr.StartRequest(ctx, oteltracing.Request{Method: "tools/call", Name: "mcp__s__echo", Session: "s", Server: "s", Meta: clientMeta})
	ctx, cs := tr.StartCall(ctx, oteltracing.Call{Server: "s", Method: "tools/call", Name: "echo"})
	err := call(ctx)
	cs.End("ok", err)
	rs.End("ok", err)
	return err
}

// BenchmarkSpans is the tracing of one request alone, without the call:
// off (a nil Tracer, what FromEnv returns by default) and on (spans
// recorded, batched and dropped at the exporter), each with the
// propagation into the backend's _meta.
func BenchmarkSpans(b *testing.B) {
	set := func(string, string) {}
	for _, arm := range []struct {
		name string
		tr   *oteltracing.Tracer
	}{{"off", nil}, {"on", onTracer(b)}} {
		b.Run(arm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = front(context.Background(), arm.tr, func(ctx context.Context) error {
					arm.tr.Propagate(ctx, set)
					return nil
				})
			}
		})
	}
}

// Arms of BenchmarkCall.
const (
	armBare = iota // no tracing code at all: the floor
	armOff         // tracing off: a nil Tracer on the call path
	armOn          // tracing on
	numArms
)

// BenchmarkCall is a tools/call through a supervisor (in-memory server,
// echo tool) three ways, interleaved call by call in an order drawn at
// random for each triple: bare (no tracing code), off and on (see
// BenchmarkSpans; on also injects the call span into the call's _meta).
// It reports the medians of off/bare and on/bare over the triples, with
// the bounds of a 95 % confidence interval, and the mean latencies.
func BenchmarkCall(b *testing.B) {
	ctx := context.Background()
	srv := conntest.NewServer()
	srv.AddEchoTool("echo")
	b.Cleanup(srv.Close)
	on := onTracer(b)
	trs := [numArms]*oteltracing.Tracer{armOn: on}
	var tools [numArms]conn.Tool
	for arm, name := range []string{"bare", "off", "on"} {
		reg := conn.NewRegistry()
		cfg := trs[arm].Instrument(conn.Config{Name: name, Transport: srv.Transport(), Registry: reg,
			FailOnStartupError: true, Logger: slog.New(slog.DiscardHandler)})
		sup, err := conn.Start(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = sup.Close(cctx)
		})
		var ok bool
		if tools[arm], ok = reg.Lookup("mcp__" + name + "__echo"); !ok {
			b.Fatal("no echo tool")
		}
	}
	call := func(arm int) {
		do := func(ctx context.Context) error {
			res, err := tools[arm].Call(ctx, map[string]any{})
			if err == nil && res.IsError {
				b.Fatal("tool error")
			}
			return err
		}
		var err error
		if arm == armBare {
			err = do(ctx)
		} else {
			err = front(ctx, trs[arm], do)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	for arm := range numArms {
		call(arm)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	order := [numArms]int{armBare, armOff, armOn}
	var sum [numArms]time.Duration
	offs, ons := make([]float64, 0, b.N), make([]float64, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		rng.Shuffle(numArms, func(i, j int) { order[i], order[j] = order[j], order[i] })
		var took [numArms]float64
		for _, arm := range order {
			t0 := time.Now()
			call(arm)
			d := time.Since(t0)
			took[arm] = float64(d)
			sum[arm] += d
		}
		offs = append(offs, took[armOff]/took[armBare])
		ons = append(ons, took[armOn]/took[armBare])
	}
	b.StopTimer()
	stats.ReportMedianCI(b, "off/bare", offs)
	stats.ReportMedianCI(b, "on/bare", ons)
	for arm, name := range []string{"bare", "off", "on"} {
		b.ReportMetric(float64(sum[arm])/float64(b.N), name+"-ns/call")
	}
}
