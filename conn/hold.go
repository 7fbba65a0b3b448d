package conn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mcpfsm/mcpfsm/conn/internal/transport"
	"github.com/mcpfsm/mcpfsm/internal/broadcast"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// holdState wakes the calls that wait for the next generation
// (Config.HoldCalls): its channel is closed and replaced at every
// transition, and each waiter looks again.
type holdState struct {
	mu   sync.Mutex
	wake broadcast.Signal
}

func (h *holdState) channel() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.wake.C()
}

// broadcast wakes every waiter; the observer calls it on every transition.
func (h *holdState) broadcast() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.wake.Notify()
}

// errNoRecovery is why a held call gave up waiting.
var errNoRecovery = errors.New("no recovery")

// retryable reports whether the supervisor may send a failed call again:
// always if its request was never written, and otherwise only if the user
// opted in and the server annotated the tool as safe to repeat.
func (s *Supervisor) retryable(raw *mcp.Tool, written bool) bool {
	if !written {
		return true
	}
	if !s.cfg.RetryIdempotent || raw == nil || raw.Annotations == nil {
		return false
	}
	return raw.Annotations.ReadOnlyHint || raw.Annotations.IdempotentHint
}

// callHeld is Tool.Call under Config.HoldCalls: a call that fails because
// the connection is gone, and that [Supervisor.retryable] allows, waits up
// to HoldCalls (from its start: since, if it waited for a slot) for the
// next established generation and is sent there once more.
func (s *Supervisor) callHeld(ctx context.Context, t Tool, args any, since time.Time) (*mcp.CallToolResult, error) {
	start := since
	if start.IsZero() {
		start = s.clk.Now()
	}
	deadline := start.Add(s.cfg.HoldCalls)
	mark := new(transport.Mark)
	res, err := t.gen.callObserved(transport.WithMark(ctx, mark), since, t.Name, t.Raw.Name, args)
	if err == nil || !errors.Is(err, ErrUnavailable) || !s.retryable(t.Raw, mark.Written()) {
		return res, err
	}
	next, werr := s.awaitGeneration(ctx, t.gen, deadline)
	if werr != nil {
		return nil, fmt.Errorf("%w (held %v for a new connection: %w)", err, s.cfg.HoldCalls, werr)
	}
	return next.callObserved(ctx, time.Time{}, t.Name, t.Raw.Name, args)
}

// awaitGeneration waits until a generation newer than old is established,
// the deadline passes, ctx ends, or the supervisor stops reconnecting.
func (s *Supervisor) awaitGeneration(ctx context.Context, old *generation, deadline time.Time) (*generation, error) {
	for {
		wake := s.holds.channel()
		st := s.State()
		if g := s.ext.live.Load(); st == Established && g != nil && g.id > old.id && !g.down() {
			return g, nil
		}
		if !recovering(st) {
			return nil, fmt.Errorf("%w: the supervisor is %s", errNoRecovery, st)
		}
		left := deadline.Sub(s.clk.Now())
		if left <= 0 {
			return nil, fmt.Errorf("%w within HoldCalls", errNoRecovery)
		}
		// AfterFunc, not Timer: a clock.Mock's Timer runs due timers on
		// the calling goroutine, racing the test's own Add.
		expired := make(chan struct{})
		timer := s.clk.AfterFunc(left, func() { close(expired) })
		select {
		case <-wake:
			timer.Stop()
		case <-expired:
			return nil, fmt.Errorf("%w within HoldCalls", errNoRecovery)
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		}
	}
}

// recovering reports whether a new generation may still come in st
// without anyone calling Close or Reconnect.
func recovering(st State) bool {
	switch st {
	case Connecting, Established, FailedRetrying, LostReconnecting:
		return true
	}
	return false
}
