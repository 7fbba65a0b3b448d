package front

import (
	"context"
	"fmt"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// downMiddleware answers a tools/call of a tool the client is not served
// when its name belongs to a configured server: the client's own
// instance of the server answers it when the server is isolated per
// client (it may list what the shared instance does not); otherwise,
// when the server is not established (it never came up, gave up or is
// reconnecting, so it lists no tools), the client gets a tool error
// naming the server, its state and its last error, as for any call
// during an outage, instead of the SDK's "unknown tool".
func (c *client) downMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		call, ok := req.(*mcp.CallToolRequest)
		if method != "tools/call" || !ok || call.Params == nil || c.f.opts.Backends == nil || c.serves(call.Params.Name) {
			return next(ctx, method, req)
		}
		if c.hides(call.Params.Name) {
			// Refused, naming the scope the caller lacks.
			return c.handler(call.Params.Name)(ctx, call)
		}
		server := serverOf(call.Params.Name)
		be := backend{server: server, subject: c.subject, f: c.f}
		st, known := be.status()
		if known && c.isolated(server) {
			// The client's own instance may list what the shared one does
			// not (or not yet): it answers.
			return c.handler(call.Params.Name)(ctx, call)
		}
		if !known || st.State == conn.Established {
			return next(ctx, method, req)
		}
		if st.State == conn.NeedsAuthorization {
			c.askInCall(ctx, be) // a 2026-07-28 client's call carries the sign-in's URL elicitation
		}
		text := c.f.describe(be, toolOp(call.Params.Name), nil, "")
		if st.LastErr != nil && st.State != conn.NeedsAuthorization { // describe said how to sign in
			text += c.f.opts.Redact(fmt.Sprintf(" (last error: %v)", st.LastErr))
		}
		return errorResult(text), nil
	}
}
