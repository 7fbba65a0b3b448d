package conn

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
	release, refused, since := t.gen.sup.acquire(ctx, t.Name)
	if refused != nil {
		return refused, nil
	}
	defer release()
	if t.gen.sup.cfg.HoldCalls > 0 {
		return t.gen.sup.callHeld(ctx, t, args, since)
	}
	return t.gen.callObserved(ctx, since, t.Name, t.Raw.Name, args)
}
