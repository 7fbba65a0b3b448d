package conn

import (
	"context"
	"maps"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/net/http/httpguts"
)

// propagatedKey holds, in a request's context, the keys and values
// Config.Propagate set for it, for the HTTP transport's headers.
type propagatedKey struct{}

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
			return next(context.WithValue(ctx, propagatedKey{}, kv), method, req)
		}
	}
}

// propagateHeaders is the HTTP transport's round-tripper that adds what
// Config.Propagate set for a request to its HTTP headers. A header the
// request already has (the SDK's own, Authorization) is kept as it is,
// and a key or value no header can carry is left to _meta.
type propagateHeaders struct{ next http.RoundTripper }

func (t propagateHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
	kv, _ := req.Context().Value(propagatedKey{}).([]string)
	if len(kv) == 0 {
		return t.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for i := 0; i < len(kv); i += 2 {
		k, v := http.CanonicalHeaderKey(kv[i]), kv[i+1]
		if _, set := req.Header[k]; !set && httpguts.ValidHeaderFieldName(k) && httpguts.ValidHeaderFieldValue(v) {
			req.Header[k] = []string{v}
		}
	}
	return t.next.RoundTrip(req)
}
