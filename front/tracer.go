package front

import (
	"context"
	"net/http"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/tracectx"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tracer traces the front's requests and the calls they make to the
// backends; package oteltracing's Tracer, through a small adapter, is one.
// Each method returns the function that ends its span with the
// request's outcome (a conn.Outcome word, or audit's denied or
// rate-limited) and error.
type Tracer interface {
	// Request starts the span of a request the front serves: method,
	// the tool's or prompt's name as the client gave it, the front
	// session's id, the server that answers (when known), and the
	// request's _meta and HTTP header, which carry the client's trace
	// context.
	Request(ctx context.Context, method, name, session, server string, meta map[string]any, header http.Header) (context.Context, func(outcome string, err error))
	// Call starts the span of a call to a backend, inside the request's.
	Call(ctx context.Context, server, method, name string) (context.Context, func(outcome string, err error))
	// Propagate sets the trace context of ctx's span, as the key and
	// value pairs of the backend call's _meta (conn.Config.Propagate).
	Propagate(ctx context.Context, set func(key, value string))
}

// traceMiddleware gives every request a span of tr's; it is a no-op
// when tr is nil (the front does not trace).
func traceMiddleware(tr Tracer) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		if tr == nil {
			return next
		}
		return traceRequests(tr, next)
	}
}

// traceRequests runs next for each request in a span of tr's.
func traceRequests(tr Tracer, next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		var name string
		var meta map[string]any
		switch p := req.GetParams().(type) {
		case *mcp.CallToolParamsRaw:
			name, meta = p.Name, p.Meta
		case *mcp.GetPromptParams:
			name, meta = p.Name, p.Meta
		case *mcp.ReadResourceParams:
			meta = p.Meta
		default:
			if p != nil {
				meta = p.GetMeta()
			}
		}
		var session string
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
			session = ss.ID()
		}
		var header http.Header
		if extra := req.GetExtra(); extra != nil {
			header = extra.Header
		}
		ctx, end := tr.Request(ctx, method, name, session, serverOf(name), meta, header)
		res, err := next(ctx, method, req)
		end(outcomeOf(res, err), err)
		return res, err
	}
}

// traced runs call, a call to server's backend, in a span of tr's own,
// or as it is when tr is nil.
func traced(ctx context.Context, tr Tracer, server, method, name string, call func(context.Context) (mcp.Result, error)) (mcp.Result, error) {
	if tr == nil {
		return call(ctx)
	}
	ctx, end := tr.Call(ctx, server, method, name)
	res, err := call(ctx)
	end(outcomeOf(res, err), err)
	return res, err
}

// callMeta is the _meta a call to a backend carries: the trace context
// of the client's request (with tracing, the call's own span replaces it
// through conn.Config.Propagate), the client capabilities a 2026-07-28
// request declared (see passCapabilities), and more.
func callMeta(client map[string]any, more mcp.Meta) mcp.Meta {
	out := mcp.Meta{}
	tracectx.Copy(out, client)
	passCapabilities(out, client)
	for k, v := range more {
		out[k] = v
	}
	return out
}

// outcomeOf words the outcome of a request for its span.
func outcomeOf(res mcp.Result, err error) string {
	if r, ok := res.(*mcp.CallToolResult); ok || err != nil {
		return string(conn.ClassifyCall(r, err))
	}
	return "ok"
}
