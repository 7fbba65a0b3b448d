package conn

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type callMetaKey struct{}

// WithCallMeta returns ctx carrying meta, which a [Tool.Call] made under
// it sends as the request's _meta (a proxy passes a progress token this
// way, for example). Everything else about the call is as without it.
func WithCallMeta(ctx context.Context, meta mcp.Meta) context.Context {
	return context.WithValue(ctx, callMetaKey{}, meta)
}

// callMeta is the _meta WithCallMeta put in ctx, or nil.
func callMeta(ctx context.Context) mcp.Meta {
	m, _ := ctx.Value(callMetaKey{}).(mcp.Meta)
	return m
}
