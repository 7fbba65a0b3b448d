package front

import (
	"context"
	"fmt"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// downMiddleware answers a tools/call of a tool the front does not serve
// when its name belongs to a configured server that is not established:
// the server never came up, gave up or is reconnecting, so it lists no
// tools. The client gets a tool error naming the server, its state and
// its last error, as for any call during an outage, instead of the SDK's
// "unknown tool".
func (f *Front) downMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		call, ok := req.(*mcp.CallToolRequest)
		if method != "tools/call" || !ok || call.Params == nil || f.opts.Status == nil || f.serves(call.Params.Name) {
			return next(ctx, method, req)
		}
		server := serverOf(call.Params.Name)
		st, known := f.opts.Status(server)
		if !known || st.State == conn.Established {
			return next(ctx, method, req)
		}
		text := f.describe(server, call.Params.Name, nil, "")
		if st.LastErr != nil {
			text += fmt.Sprintf(" (last error: %v)", st.LastErr)
		}
		return errorResult(text), nil
	}
}

// serves reports whether the front serves a tool named name now.
func (f *Front) serves(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.served[name]
	return ok
}
