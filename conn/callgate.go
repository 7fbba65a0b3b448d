package conn

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/internal/broadcast"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callGate admits a supervisor's tool calls: it owns the slots of
// Config.MaxConcurrentCalls and wakes the calls that wait for the next
// generation under Config.HoldCalls. It knows nothing of the supervisor
// that holds it; its methods are safe for concurrent use.
type callGate struct {
	clk     clock.Clock
	server  string        // Config.Name, for the refusal's text
	timeout time.Duration // Config.CallTimeout: how long a call waits for a slot
	limit   callLimit     // nil: no limit
	holds   holdState
}

// newCallGate returns the gate of a supervisor named server, with n slots
// (none: no limit) that a call waits for up to timeout.
func newCallGate(clk clock.Clock, server string, n int, timeout time.Duration) *callGate {
	return &callGate{clk: clk, server: server, timeout: timeout, limit: newCallLimit(n)}
}

// callLimit holds Config.MaxConcurrentCalls slots for a supervisor's
// tool calls; nil means no limit.
type callLimit chan struct{}

func newCallLimit(n int) callLimit {
	if n <= 0 {
		return nil
	}
	return make(callLimit, n)
}

// acquire takes a slot, waiting while every slot is taken until ctx ends
// or the call timeout passes. It returns the slot's release, or the tool
// error result that answers a call that found none. A call that waited
// gets the moment it started waiting (zero for one that did not): its
// CallTimeout counts from there, so the wait and the call share it.
func (c *callGate) acquire(ctx context.Context, tool string) (release func(), refused *mcp.CallToolResult, since time.Time) {
	l := c.limit
	if l == nil {
		return func() {}, nil, time.Time{}
	}
	select {
	case l <- struct{}{}:
		return func() { <-l }, nil, time.Time{}
	default:
	}
	timer := c.clk.Timer(c.timeout)
	defer timer.Stop()
	waited := c.clk.Now()
	select {
	case l <- struct{}{}:
		return func() { <-l }, nil, waited
	case <-timer.C:
	case <-ctx.Done():
	}
	text := fmt.Sprintf("server %q: all %d call slots (maxConcurrentCalls) stayed busy for %v; tool %q was not called; try again later",
		c.server, cap(l), c.clk.Since(waited).Round(time.Millisecond), tool)
	return nil, &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, waited
}

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
