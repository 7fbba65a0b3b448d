package fsm_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"pgregory.net/rapid"
)

// crashPoint is where a crash meets a call.
type crashPoint string

const (
	beforeWrite crashPoint = "before-write" // the server is gone when the call arrives
	afterWrite  crashPoint = "after-write"  // the server runs the tool and dies before it answers
	afterReply  crashPoint = "after-reply"  // the server answers, then dies
)

// countingServer has three tools that count their executions: "inc"
// (no annotations: not safe to repeat), "get" (readOnlyHint) and "put"
// (idempotentHint). The next execution blocks until its connection ends
// when the test arms it.
type countingServer struct {
	*conntest.Server
	mu      sync.Mutex
	runs    map[string]int
	block   atomic.Bool
	entered chan string
	release chan struct{}
}

func newCountingServer() *countingServer {
	s := &countingServer{Server: conntest.NewServer(conntest.Accept), runs: map[string]int{},
		entered: make(chan string, 1), release: make(chan struct{})}
	for _, tool := range []*mcp.Tool{
		{Name: "inc"},
		{Name: "get", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "put", Annotations: &mcp.ToolAnnotations{IdempotentHint: true}},
	} {
		tool.InputSchema = map[string]any{"type": "object"}
		name := tool.Name
		s.MCP.AddTool(tool, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.mu.Lock()
			s.runs[name]++
			s.mu.Unlock()
			if s.block.Swap(false) {
				s.entered <- name
				select {
				case <-ctx.Done():
				case <-s.release:
				}
				return nil, errors.New("cut")
			}
			return text(name + " ok"), nil
		})
	}
	return s
}

func (s *countingServer) count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[name]
}

// TestHeldCallsNeverRunTwice: with HoldCalls, over random crash points and
// tools, a call of a tool not annotated as safe to repeat is executed at
// most once (0 duplicates), a call that never reached the server
// succeeds after recovery with exactly one execution, and a read-only or
// idempotent call cut after its write is sent again only with
// RetryIdempotent. 100 checks of 10 calls: 1,000 cases.
func TestHeldCallsNeverRunTwice(t *testing.T) {
	var cases, retried atomic.Int64
	rapid.Check(t, func(rt *rapid.T) {
		retryIdempotent := rapid.Bool().Draw(rt, "retryIdempotent")
		srv := newCountingServer()
		rec := conntest.NewRecorder()
		clk := clock.NewMock()
		reg := conn.NewRegistry()
		p := policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: time.Second, MaxAttempts: 20}
		sup, err := conn.Start(context.Background(), conn.Config{
			Name: "fx", Transport: srv.Transport(), Registry: reg, Reconnect: &p,
			Clock: clk, Logger: rec.Logger(), OnTransition: rec.OnTransition,
			HoldCalls: time.Hour, RetryIdempotent: retryIdempotent,
		})
		if err != nil {
			rt.Fatalf("Start: %v", err)
		}
		defer func() {
			close(srv.release)
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			_ = sup.Close(ctx)
			srv.Close()
		}()
		rec.Expect(rt, waitLimit, conn.Established)
		restart := func() {
			tr := rec.Expect(rt, waitLimit, conn.LostReconnecting)[0]
			clk.Add(tr.Delay)
			rec.Expect(rt, waitLimit, conn.Connecting, conn.Established)
		}
		call := func(tool string) <-chan error {
			errc := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
				defer cancel()
				res, err := reg.Call(ctx, conn.PublicToolName("fx", tool), nil)
				if err == nil && (res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != tool+" ok") {
					err = errors.New("unexpected result")
				}
				errc <- err
			}()
			return errc
		}
		wait := func(errc <-chan error) error {
			select {
			case err := <-errc:
				return err
			case <-time.After(waitLimit):
				rt.Fatalf("the call did not return")
				return nil
			}
		}
		for i := range 10 {
			tool := rapid.SampledFrom([]string{"inc", "get", "put"}).Draw(rt, "tool")
			point := rapid.SampledFrom([]crashPoint{beforeWrite, afterWrite, afterReply}).Draw(rt, "point")
			before := srv.count(tool)
			var err error
			switch point {
			case beforeWrite:
				srv.Crash()
				tr := rec.Expect(rt, waitLimit, conn.LostReconnecting)[0]
				errc := call(tool)
				clk.Add(tr.Delay)
				rec.Expect(rt, waitLimit, conn.Connecting, conn.Established)
				err = wait(errc)
			case afterWrite:
				srv.block.Store(true)
				errc := call(tool)
				select {
				case <-srv.entered:
				case <-time.After(waitLimit):
					rt.Fatalf("step %d: the call never reached the tool", i)
				}
				srv.Crash()
				restart()
				err = wait(errc)
			case afterReply:
				err = wait(call(tool))
				srv.Crash()
				restart()
			}
			runs := srv.count(tool) - before
			cases.Add(1)
			if runs > 1 {
				retried.Add(1)
			}
			repeatable := tool != "inc" && retryIdempotent
			switch {
			case point == afterWrite && !repeatable:
				if !errors.Is(err, conn.ErrUnavailable) || runs != 1 {
					rt.Fatalf("step %d: %s %s (retryIdempotent %v): err %v, %d executions; want ErrUnavailable after 1", i, tool, point, retryIdempotent, err, runs)
				}
			case point == afterWrite:
				if err != nil || runs != 2 {
					rt.Fatalf("step %d: %s %s (retryIdempotent): err %v, %d executions; want success after 2", i, tool, point, err, runs)
				}
			default:
				if err != nil || runs != 1 {
					rt.Fatalf("step %d: %s %s: err %v, %d executions; want success after exactly 1", i, tool, point, err, runs)
				}
			}
			if tool == "inc" && runs > 1 {
				rt.Fatalf("step %d: the non-idempotent tool ran %d times for one call", i, runs)
			}
		}
	})
	t.Logf("%d cases; %d calls of a read-only or idempotent tool executed twice by RetryIdempotent", cases.Load(), retried.Load())
	if n := cases.Load(); n < 1000 && !testing.Short() {
		t.Errorf("only %d cases ran; want at least 1,000 (rapid.checks >= 100)", n)
	}
}
