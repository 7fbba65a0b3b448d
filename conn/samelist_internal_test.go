package conn

import (
	"context"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A re-sync that lists the same tools leaves the registry alone (nobody
// hears of a change); one that lists a changed definition swaps it in.
func TestResyncOfSameToolsChangesNothing(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "same"}, nil)
	schema := map[string]any{"type": "object"}
	srv.AddTool(&mcp.Tool{Name: "a", Description: "one", InputSchema: schema}, nil)
	var lists atomic.Int32
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				lists.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	sessions := make(chan *mcp.ServerSession, 4)
	trans := make(chan Transition, 16)
	reg := NewRegistry()
	sup, err := Start(context.Background(), Config{
		Name: "fx", Registry: reg, Clock: clock.NewMock(), Logger: slog.New(logLines{msgs: make(chan string, 64)}),
		OnTransition: func(tr Transition) { trans <- tr },
		Transport:    memTransport(srv, sessions),
		// No subscriptions/listen acknowledgement re-listing of its own.
		ProtocolVersion: ClassicProtocolVersion,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Close(context.Background())
	expectTransition(t, trans, Established)
	<-sessions

	// relisted waits until the server has answered n listings and the
	// supervisor's tool-sync machine is back in sync after the last one.
	//
	// The count is read before the state: a listing reaches the server
	// only while the machine is listing, so "in sync" read after the n-th
	// listing arrived means that listing's result was handled. Read the
	// other way round, "in sync" may predate the change that started the
	// n-th listing, and the registry is read before the swap.
	relisted := func(n int32) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got := lists.Load()
			var st syncState
			onLoop(sup, func() { st = sup.current.syncState() })
			if got >= n && st == syncIdle {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after %d listings the sync machine is %s; want %d listings, in sync", lists.Load(), st, n)
			}
			runtime.Gosched()
		}
	}
	changed := reg.Changed()
	srv.AddTool(&mcp.Tool{Name: "a", Description: "one", InputSchema: schema}, nil) // list_changed, same tool
	relisted(2)
	select {
	case <-changed:
		t.Fatal("a re-listing of the same tools changed the registry")
	default:
	}
	srv.AddTool(&mcp.Tool{Name: "a", Description: "two", InputSchema: schema}, nil)
	relisted(3)
	select {
	case <-changed:
	default:
		t.Fatal("a changed definition did not change the registry")
	}
	// At rest in sync, the generation keeps no tool-sync machine.
	var kept bool
	onLoop(sup, func() { kept = sup.current.sync != nil })
	if kept {
		t.Error("a generation in sync keeps its tool-sync machine")
	}
	if tool, ok := reg.Lookup("mcp__fx__a"); !ok || tool.Raw.Description != "two" {
		t.Fatalf("registered %+v, want the description %q", tool.Raw, "two")
	}
}
