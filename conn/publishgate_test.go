package conn_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// heldRegistry is a registry whose Replace, once hold is set, stops until
// release is closed, telling entered that it has begun.
type heldRegistry struct {
	*conn.ToolRegistry
	hold    atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (r *heldRegistry) Replace(old, next []conn.Tool) ([]func(), error) {
	if r.hold.Load() {
		close(r.entered)
		<-r.release
	}
	return r.ToolRegistry.Replace(old, next)
}

// killable is an in-memory transport with a process: Terminate counts,
// and the process is gone at once.
type killable struct {
	mcp.Transport
	terminated *atomic.Int32
}

func (k killable) Terminate() <-chan struct{} {
	k.terminated.Add(1)
	gone := make(chan struct{})
	close(gone)
	return gone
}

// TestResyncSwapFinishesBeforeTerminate is the race the simulator found
// with seed 2334 (NoStalePublish: "published the tools of process 6,
// which it had terminated"): a re-sync's swap was under way on the loop
// when the process crashed, and the generation's shutdown terminated the
// process while the registry was taking its tools. The swap must finish
// before the termination (the tools were listed while the process was
// up), and once the generation is down no re-sync may publish.
func TestResyncSwapFinishesBeforeTerminate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcp.NewServer(&mcp.Implementation{Name: "gate"}, nil)
		srv.AddTool(&mcp.Tool{Name: "a", InputSchema: map[string]any{"type": "object"}}, nil)
		sessions := make(chan *mcp.ServerSession, 4)
		var terminated atomic.Int32
		reg := &heldRegistry{ToolRegistry: conn.NewRegistry(), entered: make(chan struct{}), release: make(chan struct{})}
		p := policy.Policy{Enabled: false, InitialDelay: time.Second, MaxDelay: time.Second, MaxAttempts: 1}
		sup, err := conn.Start(context.Background(), conn.Config{
			Name: "gt", Registry: reg, Reconnect: &p, CloseTimeout: time.Second, Logger: slog.New(slog.DiscardHandler),
			Transport: conn.TransportFunc(func(ctx context.Context) (mcp.Transport, error) {
				ct, st := mcp.NewInMemoryTransports()
				ss, err := srv.Connect(ctx, st, nil)
				if err != nil {
					return nil, err
				}
				sessions <- ss
				return killable{Transport: ct, terminated: &terminated}, nil
			}),
		})
		if err != nil {
			t.Fatal(err)
		}
		defer sup.Close(context.Background())
		ss := <-sessions
		synctest.Wait()

		// The server's list changes: the re-sync's swap stops inside the
		// registry, and the process crashes meanwhile.
		reg.hold.Store(true)
		srv.AddTool(&mcp.Tool{Name: "b", InputSchema: map[string]any{"type": "object"}}, nil)
		<-reg.entered
		_ = ss.Close()
		synctest.Wait()
		if n := terminated.Load(); n != 0 {
			t.Errorf("the process was terminated %d times while the registry was taking its tools", n)
		}
		close(reg.release)
		synctest.Wait()
		if n := terminated.Load(); n != 1 {
			t.Errorf("once the swap finished the process was terminated %d times, want 1", n)
		}
	})
}
