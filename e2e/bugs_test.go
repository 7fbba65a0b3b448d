package e2e_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcpfsm/mcpfsm/conn"
)

// TestReplyRightBeforeExitIsDelivered: a server that answers a call and
// exits at once. The SDK has the reply before it sees EOF, but the loss
// handling cancels the generation's context, which races the call's wait
// for the reply: the call randomly fails with ErrUnavailable ("context
// canceled") although its reply arrived.
func TestReplyRightBeforeExitIsDelivered(t *testing.T) {
	e := newEnv(t)
	e.start(conn.Config{Transport: e.command("-crash-delay", "0"), Reconnect: fast(100)})
	const rounds = 50
	failed := 0
	for range rounds {
		e.rec.Await(t, wait, conn.Established)
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		_, err := callText(ctx, e.reg, conn.PublicToolName("fx", "crash"), map[string]any{})
		cancel()
		if err != nil {
			failed++
			t.Logf("reply lost: %v", err)
		}
		e.rec.Await(t, wait, conn.LostReconnecting)
	}
	if failed > 0 {
		t.Errorf("%d of %d calls failed although the server replied before exiting", failed, rounds)
	}
}

// TestToolSwapIsAtomic: while a server changes its tool list, a tool that
// is in every list must stay registered. swap (conn/loop.go) unregisters
// the whole previous generation before it registers the next one, so a
// concurrent Lookup or Call finds no tool at all.
func TestToolSwapIsAtomic(t *testing.T) {
	e := newEnv(t)
	e.start(conn.Config{Transport: e.command("-list-changed-every", "12ms"), Reconnect: fast(3)})
	e.rec.Await(t, wait, conn.Established)
	echo := conn.PublicToolName("fx", "echo")
	var misses, lookups atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 3_000_000 {
				if _, ok := e.reg.Lookup(echo); !ok {
					misses.Add(1)
				}
				lookups.Add(1)
			}
		})
	}
	wg.Wait()
	if misses.Load() > 0 {
		t.Errorf("echo was unregistered in %d of %d lookups", misses.Load(), lookups.Load())
	}
}
