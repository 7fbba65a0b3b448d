package conn

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The holes an audit of planted bugs found in the unit tests (issue 42):
// each test here fails on the bug named in its comment (checked by
// planting it by hand).

// slowProcess is an in-memory transport with a process that exits only
// when the test closes gone.
type slowProcess struct {
	mcp.Transport
	gone       chan struct{}
	terminated *atomic.Int32
}

func (p slowProcess) Terminate() <-chan struct{} {
	p.terminated.Add(1)
	return p.gone
}

// holeSetup starts a supervisor named name over an in-memory server with
// one tool, "a", inside a synctest bubble. Each attempt after the first
// fails (the server does not come back). With gone, each generation's
// transport is a process that exits when gone is closed.
func holeSetup(t *testing.T, name string, cfg Config, gone chan struct{}) (*Supervisor, *ToolRegistry, <-chan *mcp.ServerSession, *atomic.Int32) {
	t.Helper()
	srv := oneToolServer(name)
	sessions := make(chan *mcp.ServerSession, 4)
	var terminated, opened atomic.Int32
	reg := NewRegistry()
	p := policy.Policy{Enabled: true, InitialDelay: time.Minute, MaxDelay: time.Minute, MaxAttempts: 3}
	cfg.Name, cfg.Registry, cfg.Reconnect = name, reg, &p
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Transport = TransportFunc(func(ctx context.Context) (mcp.Transport, error) {
		if opened.Add(1) > 1 {
			return nil, errors.New("the server does not come back")
		}
		ct, st := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			return nil, err
		}
		sessions <- ss
		if gone != nil {
			return slowProcess{Transport: ct, gone: gone, terminated: &terminated}, nil
		}
		return ct, nil
	})
	sup, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	if st := sup.State(); st != Established {
		t.Fatalf("state %s after Start, want %s", st, Established)
	}
	return sup, reg, sessions, &terminated
}

// TestStaleTransportSessionEndIgnored: an end-of-session report from a
// transport the generation no longer uses (the first process of an
// attempt that learnt the classic handshake, say) is no news; the same
// report from the generation's own transport is a loss. Planted bug:
// generation.SessionEnded without its check of src (the audit's one bug
// that nothing caught).
func TestStaleTransportSessionEndIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sup, _, _, _ := holeSetup(t, "st", Config{}, nil)
		defer sup.Close(context.Background())
		g := sup.ext.live.Load()

		stale, _ := mcp.NewInMemoryTransports() // a transport g never used
		g.SessionEnded(stale, true)
		synctest.Wait()
		if st, life := sup.State(), g.lifeState(); st != Established || life != genUp {
			t.Fatalf("after a stale transport's end: supervisor %s, generation %s; want %s, %s (the report is no news)", st, life, Established, genUp)
		}

		// The generation's own transport's end is a loss: the test sees one.
		g.mu.Lock()
		own := g.transport
		g.mu.Unlock()
		g.SessionEnded(own, true)
		synctest.Wait()
		if st := sup.State(); st != LostReconnecting {
			t.Fatalf("after its own transport's end: supervisor %s, want %s", st, LostReconnecting)
		}
	})
}

// TestCloseNilOnlyWhenProcessGone: Close returns nil only once every
// process of the supervisor is gone, and ErrIncompleteShutdown when one
// outlives CloseTimeout. Planted bug: the close barrier released at
// once (bugs.SkipCloseBarrier), or Close not waiting for the release.
func TestCloseNilOnlyWhenProcessGone(t *testing.T) {
	t.Run("exits", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			gone := make(chan struct{})
			sup, _, _, terminated := holeSetup(t, "cg", Config{CloseTimeout: 5 * time.Second}, gone)
			closed := make(chan error, 1)
			go func() { closed <- sup.Close(context.Background()) }()
			time.Sleep(4 * time.Second) // within CloseTimeout, the process still running
			synctest.Wait()
			select {
			case err := <-closed:
				t.Fatalf("Close returned %v while the process was still running", err)
			default:
			}
			if terminated.Load() != 1 {
				t.Fatalf("process terminated %d times, want 1", terminated.Load())
			}
			close(gone)
			synctest.Wait()
			select {
			case err := <-closed:
				if err != nil {
					t.Fatalf("Close returned %v once the process was gone, want nil", err)
				}
			default:
				t.Fatal("Close did not return once the process was gone")
			}
		})
	})
	t.Run("outlives", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			gone := make(chan struct{})
			defer close(gone)
			sup, _, _, _ := holeSetup(t, "co", Config{CloseTimeout: 5 * time.Second}, gone)
			start := time.Now()
			err := sup.Close(context.Background())
			if !errors.Is(err, ErrIncompleteShutdown) {
				t.Fatalf("Close = %v with the process still running, want ErrIncompleteShutdown", err)
			}
			if took := time.Since(start); took != 5*time.Second {
				t.Errorf("Close returned after %v, want CloseTimeout (5s)", took)
			}
		})
	})
}

// TestHeldCallReturnsAtItsDeadline: a call held for the next connection
// (HoldCalls) returns at its own context's deadline when that comes
// before the hold ends. Planted bug: awaitGeneration without its case
// for ctx.Done (the call returns when HoldCalls ends).
func TestHeldCallReturnsAtItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sup, reg, sessions, _ := holeSetup(t, "hc", Config{HoldCalls: 5 * time.Second}, nil)
		defer sup.Close(context.Background())
		_ = (<-sessions).Close() // the server goes; reconnecting fails
		synctest.Wait()
		if st := sup.State(); !recovering(st) || st == Established {
			t.Fatalf("state %s after the server went, want a recovering one", st)
		}
		tool, ok := reg.Lookup("mcp__hc__a")
		if !ok {
			t.Fatal("tool a is not registered")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		_, err := tool.Call(ctx, map[string]any{})
		took := time.Since(start)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("held call = %v, want its context's deadline", err)
		}
		if took != time.Second {
			t.Errorf("held call returned after %v, want its deadline (1s; HoldCalls is 5s)", took)
		}
	})
}
