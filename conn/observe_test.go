package conn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/fsm/trace"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callFixture is an established supervisor on a mock clock whose server
// has an echo tool, a failing tool and a tool that blocks until its call
// ends, and which records every CallRecord.
type callFixture struct {
	clk     *clock.Mock
	srv     *conntest.Server
	rec     *conntest.Recorder
	reg     *conn.ToolRegistry
	sup     *conn.Supervisor
	calls   chan conn.CallRecord
	entered chan struct{} // a call of "block" reached the server
}

const callTimeout = 3 * time.Second

func newCallFixture(t *testing.T) *callFixture {
	t.Helper()
	f := &callFixture{clk: clock.NewMock(), srv: conntest.NewServer(), rec: conntest.NewRecorder(),
		reg: conn.NewRegistry(), calls: make(chan conn.CallRecord, 100), entered: make(chan struct{}, 10)}
	f.srv.AddEchoTool("echo")
	obj := map[string]any{"type": "object"}
	f.srv.MCP.AddTool(&mcp.Tool{Name: "fail", InputSchema: obj},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no"}}}, nil
		})
	f.srv.MCP.AddTool(&mcp.Tool{Name: "broken", InputSchema: obj},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("broken")
		})
	f.srv.MCP.AddTool(&mcp.Tool{Name: "block.it", InputSchema: obj},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			f.entered <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		})
	p := policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: time.Second, MaxAttempts: 3}
	f.sup = startEstablished(t, f.srv, f.rec, conn.Config{Registry: f.reg, Reconnect: &p, CallTimeout: callTimeout,
		Clock: f.clk, OnCall: func(r conn.CallRecord) { f.calls <- r }})
	return f
}

// record returns the one CallRecord of the call just made.
func (f *callFixture) record(t *testing.T) conn.CallRecord {
	t.Helper()
	select {
	case r := <-f.calls:
		select {
		case r2 := <-f.calls:
			t.Fatalf("two records for one call: %+v and %+v", r, r2)
		default:
		}
		return r
	default:
		t.Fatal("no CallRecord when the call returned")
		return conn.CallRecord{}
	}
}

// blockedCall starts a call of "block.it" and waits until the server has
// it; the returned channel delivers its error.
func (f *callFixture) blockedCall(t *testing.T, ctx context.Context) <-chan error {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := f.reg.Call(ctx, conn.PublicToolName("fx", "block.it"), nil)
		errc <- err
	}()
	select {
	case <-f.entered:
	case <-time.After(watchLimit):
		t.Fatal("the blocking call did not reach the server")
	}
	return errc
}

func wait(t *testing.T, errc <-chan error) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(watchLimit):
		t.Fatal("the call did not return")
		return nil
	}
}

// summary is what the tests compare of a CallRecord.
type summary struct {
	Server, Tool, RawTool string
	Generation            uint64
	Duration              time.Duration
	Outcome               conn.Outcome
	Failed                bool
}

func summarize(r conn.CallRecord) summary {
	return summary{r.Server, r.Tool, r.RawTool, r.Generation, r.Duration, r.Outcome, r.Err != nil}
}

func TestOnCallOutcomes(t *testing.T) {
	f := newCallFixture(t)
	ctx := context.Background()
	start := f.clk.Now()
	block := conn.PublicToolName("fx", "block.it")

	if _, err := f.reg.Call(ctx, "mcp__fx__echo", nil); err != nil {
		t.Fatalf("echo: %v", err)
	}
	ok := f.record(t)
	if !ok.Start.Equal(start) {
		t.Errorf("Start = %v, want the mock clock's %v", ok.Start, start)
	}

	res, err := f.reg.Call(ctx, "mcp__fx__fail", nil)
	if err != nil || !res.IsError {
		t.Fatalf("fail: %v %+v", err, res)
	}
	toolErr := f.record(t)

	// A handler error: the server answers with a JSON-RPC error.
	_, err = f.reg.Call(ctx, "mcp__fx__broken", nil)
	if err == nil {
		t.Fatal("broken succeeded")
	}
	if rpc := (*jsonrpc.Error)(nil); !errors.As(err, &rpc) {
		t.Errorf("broken: %v does not wrap a *jsonrpc.Error", err)
	}
	rpcErr := f.record(t)

	// CallTimeout, on the mock clock: the duration is exactly CallTimeout.
	errc := f.blockedCall(t, ctx)
	f.clk.Add(callTimeout)
	if err := wait(t, errc); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timed-out call: %v", err)
	}
	timeout := f.record(t)

	cctx, cancel := context.WithCancel(ctx)
	errc = f.blockedCall(t, cctx)
	f.clk.Add(time.Second)
	cancel()
	if err := wait(t, errc); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	canceled := f.record(t)

	// During the outage the call fails fast, and is still recorded.
	f.srv.Crash()
	f.rec.Expect(t, watchLimit, conn.LostReconnecting)
	if _, err := f.reg.Call(ctx, "mcp__fx__echo", nil); !errors.Is(err, conn.ErrUnavailable) {
		t.Fatalf("call during the outage: %v", err)
	}
	unavailable := f.record(t)

	got := []summary{summarize(ok), summarize(toolErr), summarize(rpcErr), summarize(timeout),
		summarize(canceled), summarize(unavailable)}
	want := []summary{
		{"fx", "mcp__fx__echo", "echo", 1, 0, conn.OutcomeOK, false},
		{"fx", "mcp__fx__fail", "fail", 1, 0, conn.OutcomeToolError, false},
		{"fx", "mcp__fx__broken", "broken", 1, 0, conn.OutcomeError, true},
		{"fx", block, "block.it", 1, callTimeout, conn.OutcomeTimeout, true},
		{"fx", block, "block.it", 1, time.Second, conn.OutcomeCanceled, true},
		{"fx", "mcp__fx__echo", "echo", 1, 0, conn.OutcomeUnavailable, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("call records (-want +got):\n%s", diff)
	}
}

func TestClassifyCall(t *testing.T) {
	unavailableTimeout := fmt.Errorf("wrapped: %w", errors.Join(conn.ErrUnavailable, context.DeadlineExceeded))
	for _, c := range []struct {
		res  *mcp.CallToolResult
		err  error
		want conn.Outcome
	}{
		{&mcp.CallToolResult{}, nil, conn.OutcomeOK},
		{nil, nil, conn.OutcomeOK},
		{&mcp.CallToolResult{IsError: true}, nil, conn.OutcomeToolError},
		{nil, fmt.Errorf("x: %w", conn.ErrUnavailable), conn.OutcomeUnavailable},
		{nil, unavailableTimeout, conn.OutcomeUnavailable},
		{nil, fmt.Errorf("x: %w", context.DeadlineExceeded), conn.OutcomeTimeout},
		{nil, context.Canceled, conn.OutcomeCanceled},
		{nil, errors.New("boom"), conn.OutcomeError},
		{&mcp.CallToolResult{IsError: true}, errors.New("boom"), conn.OutcomeError},
	} {
		if got := conn.ClassifyCall(c.res, c.err); got != c.want {
			t.Errorf("ClassifyCall(%+v, %v) = %s, want %s", c.res, c.err, got, c.want)
		}
	}
}

// TestTransitionTraceStep: a transition becomes a trace step of the
// machine named by its server, with conn's own fields in Extra and the
// cause's secrets redacted; a step with none of them has no Extra.
func TestTransitionTraceStep(t *testing.T) {
	at := time.Date(2026, 7, 28, 10, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	tr := conn.Transition{
		Server: "git", From: conn.Connecting, To: conn.Exhausted, Event: conn.EventAttemptFailed, When: "budget spent",
		At: at, Attempt: 3, Delay: 1500 * time.Millisecond, Generation: 7,
		Err: errors.New(`dial https://bob:hunter2@example.com/mcp: refused`),
	}
	got := tr.TraceStep()
	var x conn.TraceExtra
	if err := json.Unmarshal(got.Extra, &x); err != nil {
		t.Fatal(err)
	}
	got.Extra = nil
	want := trace.Step{Time: "2026-07-28T08:00:00Z", Machine: "git", From: "connecting", Event: "attempt-failed", When: "budget spent", To: "exhausted"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("TraceStep (-want +got):\n%s", diff)
	}
	if x.Attempt != 3 || x.Delay != "1.5s" || x.Generation != 7 || !strings.Contains(x.Cause, "example.com") || strings.Contains(x.Cause, "hunter2") {
		t.Errorf("TraceStep's extra %+v, want attempt 3, delay 1.5s, generation 7 and the cause without its password", x)
	}
	if s := (conn.Transition{Server: "git", From: conn.Established, To: conn.Disposing, Event: conn.EventDispose}).TraceStep(); s.Extra != nil {
		t.Errorf("a step without attempt, delay, generation or cause has extra %s", s.Extra)
	}
}
