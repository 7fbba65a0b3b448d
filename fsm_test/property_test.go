package fsm_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
	"pgregory.net/rapid"
)

// TestSupervisorProperties drives a supervisor with random scripts (server
// behaviours per generation, crashes, hangs, clock advances, tool-list
// changes, calls, keep-alive on or off, Close) and checks what must hold whatever the interleaving: every
// reported transition is in the table and continues from the previous one,
// no generation opens while an earlier one is still connected,
// attempts stay within the budget, calls never hang and fail only with the
// documented errors, and Close leaves no tool (and, through the package's
// goleak check, no goroutine).
func TestSupervisorProperties(t *testing.T) {
	table := conn.Table()
	rapid.Check(t, func(rt *rapid.T) {
		plan := rapid.SliceOfN(rapid.SampledFrom([]conntest.Behaviour{conntest.Accept, conntest.Refuse, conntest.Hang}), 1, 6).Draw(rt, "plan")
		p := policy.Policy{
			Enabled:      rapid.IntRange(0, 4).Draw(rt, "enabled") > 0,
			InitialDelay: time.Second, MaxDelay: 4 * time.Second,
			MaxAttempts: rapid.IntRange(1, 4).Draw(rt, "maxAttempts"),
		}
		keepAlive := time.Duration(rapid.SampledFrom([]int{0, 5}).Draw(rt, "keepAlive")) * time.Second
		srv := conntest.NewServer(plan...)
		srv.AddEchoTool("a")
		var thaw func()
		rec := conntest.NewRecorder()
		clk := clock.NewMock()
		reg := conn.NewRegistry()
		sup, err := conn.Start(context.Background(), conn.Config{
			Name: "fx", Transport: srv.Transport(), Registry: reg, Reconnect: &p,
			Clock: clk, Logger: rec.Logger(), OnTransition: rec.OnTransition, KeepAlive: keepAlive,
		})
		if err != nil {
			rt.Fatalf("Start: %v", err)
		}
		defer func() {
			if thaw != nil {
				thaw()
			}
			// Also when a check failed half-way: leave nothing running.
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			_ = sup.Close(ctx)
			srv.Close()
		}()
		steps := rapid.IntRange(0, 12).Draw(rt, "steps")
		for i := range steps {
			switch rapid.IntRange(0, 4).Draw(rt, "action") {
			case 4: // the server hangs, or recovers from hanging
				if thaw == nil {
					thaw = srv.Freeze()
				} else {
					thaw()
					thaw = nil
				}
			case 0:
				srv.Crash()
			case 1:
				clk.Add(time.Duration(rapid.IntRange(0, 40).Draw(rt, "advance")) * time.Second)
			case 2:
				srv.AddEchoTool(fmt.Sprintf("t%d", i))
			case 3:
				if thaw != nil {
					break // a hung server holds a call until its deadline
				}
				ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
				_, err := reg.Call(ctx, "mcp__fx__a", nil)
				cancel()
				if errors.Is(err, context.DeadlineExceeded) {
					rt.Fatalf("a call hung for %v", waitLimit)
				}
				if err != nil && !errors.Is(err, conn.ErrUnavailable) && err.Error() != `conn: no tool named "mcp__fx__a" is registered` {
					rt.Fatalf("call failed with an undocumented error: %v", err)
				}
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := sup.Close(ctx); err != nil {
			rt.Fatalf("Close: %v", err)
		}
		srv.Close()
		if n := len(reg.Tools()); n != 0 {
			rt.Fatalf("%d tools registered after Close", n)
		}
		if n := srv.Overlaps(); n != 0 {
			rt.Fatalf("%d generations opened while an earlier one was still connected", n)
		}

		prev := conn.Connecting
		for prev != conn.Disposed {
			tr := rec.Next(rt, waitLimit)
			if tr.From != prev {
				rt.Fatalf("transition %s -> %s does not continue from %s; path %s", tr.From, tr.To, prev, conntest.Path(rec.Seen()))
			}
			if !slices.Contains(table.Targets(tr.From)[tr.Event], tr.To) {
				rt.Fatalf("transition %s -%s-> %s is not in the table", tr.From, tr.Event, tr.To)
			}
			if tr.Attempt > p.MaxAttempts {
				rt.Fatalf("attempt %d beyond MaxAttempts %d; path %s", tr.Attempt, p.MaxAttempts, conntest.Path(rec.Seen()))
			}
			if tr.To == conn.Exhausted && tr.Attempt != p.MaxAttempts {
				rt.Fatalf("exhausted after %d of %d attempts", tr.Attempt, p.MaxAttempts)
			}
			if tr.To.Failed() && tr.Event != conn.EventAttemptFailed || tr.To.Lost() && tr.Event != conn.EventConnectionLost {
				rt.Fatalf("state %s entered by %s", tr.To, tr.Event)
			}
			var ferr *conn.FailedError
			var lerr *conn.LostError
			if tr.To.Failed() && !errors.As(tr.Err, &ferr) || tr.To.Lost() && !errors.As(tr.Err, &lerr) {
				rt.Fatalf("%s carries %v", tr.To, tr.Err)
			}
			prev = tr.To
		}
		rec.NoTransition(rt)
	})
}
