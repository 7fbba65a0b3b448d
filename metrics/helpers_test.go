package metrics_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/metrics"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

const limit = 10 * time.Second

// reading collects what a ManualReader holds, reduced to what tests
// compare: one value per instrument and attribute set, the set rendered
// as "k=v,k=v" in key order.
type reading map[string]map[string]float64

// hist is a histogram point: its count and sum.
type hist struct {
	Count uint64
	Sum   float64
}

type sdk struct {
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newSDK(t testing.TB) sdk {
	t.Helper()
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() {
		if err := mp.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return sdk{r, mp}
}

func render(s attribute.Set) string {
	var parts []string
	for it := s.Iter(); it.Next(); {
		kv := it.Attribute()
		parts = append(parts, string(kv.Key)+"="+kv.Value.String())
	}
	return strings.Join(parts, ",")
}

// collect reads every instrument: sums and gauges as values, histograms
// as hist values.
func (s sdk) collect(t testing.TB) (values reading, hists map[string]map[string]hist) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := s.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	values, hists = reading{}, map[string]map[string]hist{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != metrics.ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, metrics.ScopeName)
		}
		for _, md := range sm.Metrics {
			switch d := md.Data.(type) {
			case metricdata.Sum[int64]:
				values[md.Name] = map[string]float64{}
				for _, p := range d.DataPoints {
					values[md.Name][render(p.Attributes)] = float64(p.Value)
				}
			case metricdata.Gauge[int64]:
				values[md.Name] = map[string]float64{}
				for _, p := range d.DataPoints {
					values[md.Name][render(p.Attributes)] = float64(p.Value)
				}
			case metricdata.Histogram[float64]:
				hists[md.Name] = map[string]hist{}
				for _, p := range d.DataPoints {
					hists[md.Name][render(p.Attributes)] = hist{p.Count, p.Sum}
				}
			default:
				t.Errorf("%s: unexpected data %T", md.Name, md.Data)
			}
		}
	}
	return values, hists
}

// fixture is a conntest server with an echo and a failing tool.
func newServer(t testing.TB) *conntest.Server {
	t.Helper()
	srv := conntest.NewServer()
	srv.AddEchoTool("echo")
	srv.AddEchoTool("other")
	t.Cleanup(srv.Close)
	return srv
}

func closeSup(t testing.TB, sup *conn.Supervisor) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if err := sup.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func testPolicy() *policy.Policy {
	return &policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: time.Second, MaxAttempts: 5}
}

func config(name string, srv *conntest.Server, clk clock.Clock, rec *conntest.Recorder) conn.Config {
	return conn.Config{Name: name, Transport: srv.Transport(), Registry: conn.NewRegistry(), Reconnect: testPolicy(),
		Clock: clk, Logger: rec.Logger(), OnTransition: rec.OnTransition}
}

func sortStrings(s []string) []string { slices.Sort(s); return s }

// jsonrpcError is what a server's JSON-RPC error answer unwraps to.
var jsonrpcError = jsonrpc.Error{Code: -32603, Message: "internal error"}

// newMetrics returns a Metrics on a fresh SDK, closed when the test ends.
func newMetrics(t testing.TB) (sdk, *metrics.Metrics) {
	t.Helper()
	s := newSDK(t)
	m, err := metrics.New(s.mp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return s, m
}
