package conn

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
func (s *Supervisor) acquire(ctx context.Context, tool string) (release func(), refused *mcp.CallToolResult, since time.Time) {
	l := s.limit
	if l == nil {
		return func() {}, nil, time.Time{}
	}
	select {
	case l <- struct{}{}:
		return func() { <-l }, nil, time.Time{}
	default:
	}
	timer := s.clk.Timer(s.cfg.CallTimeout)
	defer timer.Stop()
	waited := s.clk.Now()
	select {
	case l <- struct{}{}:
		return func() { <-l }, nil, waited
	case <-timer.C:
	case <-ctx.Done():
	}
	text := fmt.Sprintf("server %q: all %d call slots (maxConcurrentCalls) stayed busy for %v; tool %q was not called; try again later",
		s.cfg.Name, cap(l), s.clk.Since(waited).Round(time.Millisecond), tool)
	return nil, &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, waited
}
