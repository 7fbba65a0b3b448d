package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/metrics"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// A server with more tools (and error codes) than the cache holds: every
// call is still recorded under its own attributes, and the cache stops at
// its bound.
func TestOnCallCacheBound(t *testing.T) {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r), sdkmetric.WithCardinalityLimit(4*metrics.MaxCachedSets))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m, err := metrics.New(mp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	s := sdk{r, mp}

	tools := metrics.MaxCachedSets + 50
	for round := range 2 { // the second round finds the cache full
		for i := range tools {
			m.OnCall(conn.CallRecord{Server: "big", RawTool: fmt.Sprintf("t%d", i), Duration: time.Second, Outcome: conn.OutcomeOK})
		}
		metrics.Flush(m) // sets are looked up, and cached, when calls are recorded
		if got := metrics.CachedSets(m); got != metrics.MaxCachedSets {
			t.Fatalf("round %d: %d sets cached, want the bound %d", round, got, metrics.MaxCachedSets)
		}
	}
	// Codes of a tool past the budget, and more codes than a tool caches.
	last := fmt.Sprintf("t%d", tools-1)
	for code := range int64(metrics.MaxCodesPerTool + 2) {
		err := fmt.Errorf("call: %w", errors.Join(errors.New("x"), &jsonrpc.Error{Code: -32000 - code}))
		for _, tool := range []string{"t0", last} {
			m.OnCall(conn.CallRecord{Server: "big", RawTool: tool, Duration: time.Second, Outcome: conn.OutcomeError, Err: err})
		}
	}

	_, h := s.collect(t)
	got := h["mcp.client.operation.duration"]
	if len(got) != tools+2*(metrics.MaxCodesPerTool+2) {
		t.Errorf("%d points, want %d", len(got), tools+2*(metrics.MaxCodesPerTool+2))
	}
	for _, i := range []int{0, metrics.MaxCachedSets - 1, metrics.MaxCachedSets, tools - 1} {
		k := fmt.Sprintf("gen_ai.operation.name=execute_tool,gen_ai.tool.name=t%d,mcp.method.name=tools/call,"+
			"mcpfsm.call.outcome=ok,mcpfsm.server.name=big", i)
		if got[k] != (hist{2, 2}) {
			t.Errorf("tool t%d: %+v, want two calls", i, got[k])
		}
	}
	for _, tool := range []string{"t0", last} {
		for code := range int64(metrics.MaxCodesPerTool + 2) {
			c := -32000 - code
			k := fmt.Sprintf("error.type=%d,gen_ai.operation.name=execute_tool,gen_ai.tool.name=%s,mcp.method.name=tools/call,"+
				"mcpfsm.call.outcome=error,mcpfsm.server.name=big,rpc.response.status_code=%d", c, tool, c)
			if got[k] != (hist{1, 1}) {
				t.Errorf("%s code %d: %+v, want one call", tool, c, got[k])
			}
		}
	}
}

// Recording a call allocates nothing once its set is cached, whether it
// succeeded or failed with a JSON-RPC error.
func TestOnCallAllocs(t *testing.T) {
	_, m := newMetrics(t)
	cfg := m.Instrument(conn.Config{Name: "fx"})
	rpcErr := fmt.Errorf("calling %q: %w", "tools/call", &jsonrpcError)
	for _, r := range []conn.CallRecord{
		{Server: "fx", RawTool: "a", Duration: time.Millisecond, Outcome: conn.OutcomeOK},
		{Server: "fx", RawTool: "a", Duration: time.Millisecond, Outcome: conn.OutcomeToolError},
		{Server: "fx", RawTool: "a", Duration: time.Millisecond, Outcome: conn.OutcomeError, Err: rpcErr},
		{Server: "fx", RawTool: "a", Duration: time.Millisecond, Outcome: conn.OutcomeTimeout, Err: context.DeadlineExceeded},
	} {
		for name, record := range map[string]func(conn.CallRecord){"OnCall": m.OnCall, "Instrument": cfg.OnCall} {
			record(r) // builds and caches the set, and the SDK's point
			if n := testing.AllocsPerRun(100, func() { record(r) }); n != 0 {
				t.Errorf("%s %s: %v allocations per call, want 0", name, r.Outcome, n)
			}
		}
	}
}
