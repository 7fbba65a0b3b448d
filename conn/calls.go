package conn

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/mcpfsm/mcpfsm/conn/internal/transport"
	"github.com/mcpfsm/mcpfsm/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool call's path, from Tool.Call to the session: a slot of
// MaxConcurrentCalls, the hold for the next generation (HoldCalls), the
// OnCall record, then the request (session.go).

// Call calls the tool on the server generation that registered it, with the
// supervisor's CallTimeout as an upper bound on the deadline. During an
// outage, after exhaustion and after Close it fails fast with an error
// matching [ErrUnavailable] that names the server and its state, unless
// Config.HoldCalls lets it wait for the next connection (see there for
// when a call is sent again).
func (t Tool) Call(ctx context.Context, args any) (*mcp.CallToolResult, error) {
	if t.gen == nil || t.Raw == nil {
		return nil, fmt.Errorf("conn: tool %q was not published by a supervisor", t.Name)
	}
	release, refused, since := t.gen.sup.gate.acquire(ctx, t.Name)
	if refused != nil {
		return refused, nil
	}
	defer release()
	if t.gen.sup.cfg.HoldCalls > 0 {
		return t.gen.sup.callHeld(ctx, t, args, since)
	}
	return t.gen.callObserved(ctx, since, t.Name, t.Raw.Name, args)
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

// awaitGeneration waits until a generation newer than old is established,
// the deadline passes, ctx ends, or the supervisor stops reconnecting.
func (s *Supervisor) awaitGeneration(ctx context.Context, old *generation, deadline time.Time) (*generation, error) {
	for {
		wake := s.gate.holds.channel()
		st := s.State()
		if g := s.ext.live.Load(); st == Established && g != nil && g.id > old.id && !g.down() {
			return g, nil
		}
		if !recovering(st) {
			if st == Disposed {
				st = Disposing // Close moves through both, often at one instant: which one a waiter sees is chance
			}
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

// errNoRecovery is why a held call gave up waiting.
var errNoRecovery = errors.New("no recovery")

// callObserved is [generation.call], reported to Config.OnCall when it is
// set. Every call of a published tool ends here, fast-failed ones included.
// since is when the call started, if it waited for a slot first (zero:
// now).
func (g *generation) callObserved(ctx context.Context, since time.Time, public, raw string, args any) (*mcp.CallToolResult, error) {
	on := g.sup.cfg.OnCall
	if on == nil {
		return g.call(ctx, since, public, raw, args)
	}
	clk := g.sup.clk
	start := since
	if start.IsZero() {
		start = clk.Now()
	}
	res, err := g.call(ctx, since, public, raw, args)
	on(CallRecord{
		Server: g.sup.cfg.Name, Tool: public, RawTool: raw, Generation: g.id,
		Start: start, Duration: clk.Since(start), Outcome: ClassifyCall(res, err), Err: err,
	})
	return res, err
}

// call is Tool.Call on this generation; since is when the call started,
// if it waited for a slot first (zero: now).
func (g *generation) call(ctx context.Context, since time.Time, public, raw string, args any) (*mcp.CallToolResult, error) {
	var res *mcp.CallToolResult
	err := g.request(ctx, public, since, func(ctx context.Context) (err error) {
		res, err = g.sess.CallTool(ctx, &mcp.CallToolParams{Meta: callMeta(ctx), Name: raw, Arguments: args})
		return err
	})
	// The caller may be a remote MCP client: the SDK's errors quote the
	// endpoint's URL.
	return res, redact.Error(err)
}

// WithCallMeta returns ctx carrying meta, which a [Tool.Call] made under
// it sends as the request's _meta (a proxy passes a progress token this
// way, for example). Everything else about the call is as without it.
func WithCallMeta(ctx context.Context, meta mcp.Meta) context.Context {
	return context.WithValue(ctx, callMetaKey{}, meta)
}

type callMetaKey struct{}

// callMeta is a copy of the _meta WithCallMeta put in ctx, or nil: the
// SDK adds its own keys to a request's _meta in place (on 2026-07-28,
// the protocol version, client info and capabilities), which must not
// reach the caller's map, nor race with another call made with it.
func callMeta(ctx context.Context) mcp.Meta {
	m, _ := ctx.Value(callMetaKey{}).(mcp.Meta)
	return maps.Clone(m)
}
