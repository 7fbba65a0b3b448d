package conn

import (
	"context"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type callMetaKey struct{}

// WithCallMeta returns ctx carrying meta, which a [Tool.Call] made under
// it sends as the request's _meta (a proxy passes a progress token this
// way, for example). Everything else about the call is as without it.
func WithCallMeta(ctx context.Context, meta mcp.Meta) context.Context {
	return context.WithValue(ctx, callMetaKey{}, meta)
}

// callMeta is a copy of the _meta WithCallMeta put in ctx, or nil: the
// SDK adds its own keys to a request's _meta in place (on 2026-07-28,
// the protocol version, client info and capabilities), which must not
// reach the caller's map, nor race with another call made with it.
func callMeta(ctx context.Context) mcp.Meta {
	m, _ := ctx.Value(callMetaKey{}).(mcp.Meta)
	return maps.Clone(m)
}
