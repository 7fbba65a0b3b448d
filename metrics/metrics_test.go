package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/metrics"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func transitionKey(from, to conn.State, ev conn.Event) string {
	return fmt.Sprintf("mcpfsm.server.name=fx,mcpfsm.transition.event=%s,mcpfsm.transition.from=%s,mcpfsm.transition.to=%s", ev, from, to)
}

func callKey(tool string, o conn.Outcome, errType string) string {
	k := ""
	if errType != "" {
		k = "error.type=" + errType + ","
	}
	return k + "gen_ai.operation.name=execute_tool,gen_ai.tool.name=" + tool +
		",mcp.method.name=tools/call,mcpfsm.call.outcome=" + string(o) + ",mcpfsm.server.name=fx"
}

// stateGauge is the expected mcpfsm.connection.state of server fx in state cur.
func stateGauge(cur conn.State) map[string]float64 {
	out := map[string]float64{}
	spec := conn.Table()
	for _, st := range spec.States {
		if spec.Superstate(st.Name) {
			continue
		}
		v := 0.0
		if st.Name == cur {
			v = 1
		}
		out["mcpfsm.server.name=fx,mcpfsm.state="+string(st.Name)] = v
	}
	return out
}

// One supervisor's life on a mock clock: a failed first attempt, recovery,
// calls of every outcome, a loss, a failed reconnect, a call during the
// outage, and Close. Every instrument is read through a ManualReader.
func TestSupervisorLifecycle(t *testing.T) {
	s, m := newMetrics(t)
	clk := clock.NewMock()
	rec := conntest.NewRecorder()
	srv := conntest.NewServer(conntest.Refuse, conntest.Accept)
	t.Cleanup(srv.Close)
	srv.AddEchoTool("echo")
	srv.MCP.AddTool(&mcp.Tool{Name: "fail", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no"}}}, nil
		})
	cfg := config("fx", srv, clk, rec)
	reg := cfg.Registry.(*conn.ToolRegistry)
	sup, err := m.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer closeSup(t, sup)

	rec.Expect(t, limit, conn.FailedRetrying)
	v, _ := s.collect(t)
	if diff := cmp.Diff(stateGauge(conn.FailedRetrying), v["mcpfsm.connection.state"]); diff != "" {
		t.Errorf("state after the first failure (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{"mcpfsm.server.name=fx": 0}, v["mcpfsm.connection.tools"]); diff != "" {
		t.Errorf("tools after the first failure (-want +got):\n%s", diff)
	}

	clk.Add(time.Second) // the outage that began with the failed first attempt lasts 1s
	rec.Expect(t, limit, conn.Connecting, conn.Established)
	v, _ = s.collect(t)
	if diff := cmp.Diff(stateGauge(conn.Established), v["mcpfsm.connection.state"]); diff != "" {
		t.Errorf("state when established (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{"mcpfsm.server.name=fx": 2}, v["mcpfsm.connection.tools"]); diff != "" {
		t.Errorf("tools when established (-want +got):\n%s", diff)
	}

	ctx := context.Background()
	for range 2 {
		if _, err := reg.Call(ctx, "mcp__fx__echo", nil); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := reg.Call(ctx, "mcp__fx__fail", nil); err != nil || !res.IsError {
		t.Fatalf("fail: %v %+v", err, res)
	}

	clk.Add(10 * time.Second)
	srv.Plan(conntest.Refuse)
	srv.Crash() // a second outage begins
	rec.Expect(t, limit, conn.LostReconnecting)
	clk.Add(time.Second)
	rec.Expect(t, limit, conn.Connecting, conn.FailedRetrying)
	if _, err := reg.Call(ctx, "mcp__fx__echo", nil); !errors.Is(err, conn.ErrUnavailable) {
		t.Fatalf("call during the outage: %v", err)
	}
	clk.Add(500 * time.Millisecond)
	closeSup(t, sup) // ends the outage after 1.5s
	rec.Expect(t, limit, conn.Disposing, conn.Disposed)

	v, h := s.collect(t)
	if got := v["mcpfsm.connection.state"]; len(got) != 0 {
		t.Errorf("a disposed supervisor is still reported: %v", got)
	}
	wantTransitions := map[string]float64{
		transitionKey(conn.Connecting, conn.FailedRetrying, conn.EventAttemptFailed):     2,
		transitionKey(conn.FailedRetrying, conn.Connecting, conn.EventBackoffElapsed):    1,
		transitionKey(conn.Connecting, conn.Established, conn.EventConnected):            1,
		transitionKey(conn.Established, conn.LostReconnecting, conn.EventConnectionLost): 1,
		transitionKey(conn.LostReconnecting, conn.Connecting, conn.EventBackoffElapsed):  1,
		transitionKey(conn.FailedRetrying, conn.Disposing, conn.EventDispose):            1,
		transitionKey(conn.Disposing, conn.Disposed, conn.EventDisposed):                 1,
	}
	if diff := cmp.Diff(wantTransitions, v["mcpfsm.connection.transitions"]); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{"mcpfsm.server.name=fx": 2}, v["mcpfsm.connection.reconnect.attempts"]); diff != "" {
		t.Errorf("reconnect attempts (-want +got):\n%s", diff)
	}
	wantOutages := map[string]hist{
		"mcpfsm.outage.end=recovered,mcpfsm.server.name=fx": {1, 1},
		"mcpfsm.outage.end=closed,mcpfsm.server.name=fx":    {1, 1.5},
	}
	if diff := cmp.Diff(wantOutages, h["mcpfsm.connection.outage.duration"]); diff != "" {
		t.Errorf("outages (-want +got):\n%s", diff)
	}
	wantCalls := map[string]hist{
		callKey("echo", conn.OutcomeOK, ""):                     {2, 0},
		callKey("fail", conn.OutcomeToolError, "tool_error"):    {1, 0},
		callKey("echo", conn.OutcomeUnavailable, "unavailable"): {1, 0},
	}
	if diff := cmp.Diff(wantCalls, h["mcp.client.operation.duration"]); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// Call durations and the error attributes of each outcome, recorded from
// CallRecords directly.
func TestOnCallAttributes(t *testing.T) {
	s, m := newMetrics(t)
	rpcErr := fmt.Errorf("calling %q: %w", "tools/call", &jsonrpcError)
	for _, r := range []conn.CallRecord{
		{Server: "fx", RawTool: "a", Duration: 250 * time.Millisecond, Outcome: conn.OutcomeOK},
		{Server: "fx", RawTool: "a", Duration: 750 * time.Millisecond, Outcome: conn.OutcomeOK},
		{Server: "fx", RawTool: "a", Duration: 3 * time.Second, Outcome: conn.OutcomeTimeout, Err: context.DeadlineExceeded},
		{Server: "fx", RawTool: "a", Duration: time.Second, Outcome: conn.OutcomeCanceled, Err: context.Canceled},
		{Server: "fx", RawTool: "a", Duration: time.Second, Outcome: conn.OutcomeError, Err: rpcErr},
		{Server: "fx", RawTool: "a", Duration: time.Second, Outcome: conn.OutcomeError, Err: errors.New("boom")},
	} {
		m.OnCall(r)
	}
	_, h := s.collect(t)
	want := map[string]hist{
		callKey("a", conn.OutcomeOK, ""):               {2, 1},
		callKey("a", conn.OutcomeTimeout, "timeout"):   {1, 3},
		callKey("a", conn.OutcomeCanceled, "canceled"): {1, 1},
		callKey("a", conn.OutcomeError, "_OTHER"):      {1, 1},
		"error.type=-32603,gen_ai.operation.name=execute_tool,gen_ai.tool.name=a,mcp.method.name=tools/call," +
			"mcpfsm.call.outcome=error,mcpfsm.server.name=fx,rpc.response.status_code=-32603": {1, 1},
	}
	if diff := cmp.Diff(want, h["mcp.client.operation.duration"]); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// A host that adds and removes supervisors at run time: each is reported
// from Track until it is disposed or untracked, the others undisturbed.
func TestTrackManySupervisors(t *testing.T) {
	s, m := newMetrics(t)
	clk := clock.NewMock()
	srv := newServer(t)
	start := func(name string) *conn.Supervisor {
		rec := conntest.NewRecorder()
		cfg := config(name, srv, clk, rec)
		cfg.FailOnStartupError = true
		sup, err := m.Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeSup(t, sup) })
		return sup
	}
	servers := func() []string {
		v, _ := s.collect(t)
		var out []string
		for k, val := range v["mcpfsm.connection.tools"] {
			out = append(out, fmt.Sprintf("%s:%v", k, val))
		}
		return sortStrings(out)
	}
	a, _ := start("a"), start("b")
	if diff := cmp.Diff([]string{"mcpfsm.server.name=a:2", "mcpfsm.server.name=b:2"}, servers()); diff != "" {
		t.Errorf("two servers (-want +got):\n%s", diff)
	}
	closeSup(t, a)
	c := start("c")
	untrack := m.Track(c) // tracking twice reports once
	if diff := cmp.Diff([]string{"mcpfsm.server.name=b:2", "mcpfsm.server.name=c:2"}, servers()); diff != "" {
		t.Errorf("after a reload (-want +got):\n%s", diff)
	}
	untrack()
	if diff := cmp.Diff([]string{"mcpfsm.server.name=b:2"}, servers()); diff != "" {
		t.Errorf("after untracking c (-want +got):\n%s", diff)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if got := servers(); len(got) != 0 {
		t.Errorf("after Close: %v", got)
	}
}

// Instrument keeps the hooks a config already has, and each supervisor
// keeps its own outage.
func TestInstrumentChainsHooks(t *testing.T) {
	s, m := newMetrics(t)
	var trs []conn.Transition
	var calls []conn.CallRecord
	cfg := m.Instrument(conn.Config{
		OnTransition: func(t conn.Transition) { trs = append(trs, t) },
		OnCall:       func(r conn.CallRecord) { calls = append(calls, r) },
	})
	t0 := time.Unix(1000, 0)
	cfg.OnTransition(conn.Transition{Server: "fx", From: conn.Established, To: conn.LostReconnecting, Event: conn.EventConnectionLost, At: t0})
	other := m.Instrument(conn.Config{})
	other.OnTransition(conn.Transition{Server: "fx", From: conn.Connecting, To: conn.Established, Event: conn.EventConnected, At: t0.Add(time.Second)})
	cfg.OnTransition(conn.Transition{Server: "fx", From: conn.LostReconnecting, To: conn.Connecting, Event: conn.EventBackoffElapsed, At: t0.Add(2 * time.Second)})
	cfg.OnTransition(conn.Transition{Server: "fx", From: conn.Connecting, To: conn.Established, Event: conn.EventConnected, At: t0.Add(3 * time.Second)})
	cfg.OnCall(conn.CallRecord{Server: "fx", RawTool: "a", Outcome: conn.OutcomeOK})
	if len(trs) != 3 || len(calls) != 1 {
		t.Errorf("the config's own hooks saw %d transitions and %d calls, want 3 and 1", len(trs), len(calls))
	}
	_, h := s.collect(t)
	// other's connected step had no outage open; cfg's outage lasted 3s.
	want := map[string]hist{"mcpfsm.outage.end=recovered,mcpfsm.server.name=fx": {1, 3}}
	if diff := cmp.Diff(want, h["mcpfsm.connection.outage.duration"]); diff != "" {
		t.Errorf("outages (-want +got):\n%s", diff)
	}
}

func TestNewNilProvider(t *testing.T) {
	if _, err := metrics.New(nil); err == nil {
		t.Error("New(nil) succeeded")
	}
}

// TestReconnectAttemptsCountEveryWayBack: Reconnect and probes are
// reconnect attempts too.
func TestReconnectAttemptsCountEveryWayBack(t *testing.T) {
	s, m := newMetrics(t)
	observe := m.TransitionObserver()
	for _, tr := range []conn.Transition{
		{Server: "fx", From: conn.Connecting, To: conn.Exhausted, Event: conn.EventAttemptFailed},
		{Server: "fx", From: conn.Exhausted, To: conn.Connecting, Event: conn.EventProbe},
		{Server: "fx", From: conn.Connecting, To: conn.Exhausted, Event: conn.EventAttemptFailed},
		{Server: "fx", From: conn.Exhausted, To: conn.Connecting, Event: conn.EventReconnect},
		{Server: "fx", From: conn.Connecting, To: conn.FailedRetrying, Event: conn.EventAttemptFailed},
		{Server: "fx", From: conn.FailedRetrying, To: conn.Connecting, Event: conn.EventBackoffElapsed},
	} {
		observe(tr)
	}
	v, _ := s.collect(t)
	if diff := cmp.Diff(map[string]float64{"mcpfsm.server.name=fx": 3}, v["mcpfsm.connection.reconnect.attempts"]); diff != "" {
		t.Errorf("reconnect attempts (-want +got):\n%s", diff)
	}
}
