package conn

import (
	"context"
	"maps"
	"strings"

	"github.com/mcpfsm/mcpfsm/conn/internal/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// propagating is the sending middleware of Config.Propagate: every
// request (not notification) gets what prop sets for its context in a
// copy of its _meta, and carries it in its context to the HTTP transport.
func propagating(prop func(context.Context, func(key, value string))) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			p := req.GetParams()
			if p == nil || strings.HasPrefix(method, "notifications/") {
				return next(ctx, method, req)
			}
			var kv []string
			prop(ctx, func(key, value string) {
				if key != "" {
					kv = append(kv, key, value)
				}
			})
			if len(kv) == 0 {
				return next(ctx, method, req)
			}
			// A copy: the map may be the caller's (WithCallMeta).
			old := p.GetMeta()
			meta := make(map[string]any, len(old)+len(kv)/2)
			maps.Copy(meta, old)
			for i := 0; i < len(kv); i += 2 {
				meta[kv[i]] = kv[i+1]
			}
			p.SetMeta(meta)
			return next(transport.WithPropagated(ctx, kv), method, req)
		}
	}
}
