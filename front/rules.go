package front

import (
	"context"
	"errors"
	"net/http"

	"github.com/mcpfsm/mcpfsm/access"
	"github.com/mcpfsm/mcpfsm/audit"
	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/tracectx"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's per-caller rules (package authz; Backends.Guard) decides
// what each client sees and may use: a tool, prompt or resource whose
// rules the client's caller does not pass is not in its lists (and its
// lists change, with list_changed to it alone, when a reload changes the
// rules), and a request of it is refused with a JSON-RPC error naming
// the missing scope; a call past the caller's rate is answered at once
// with a tool error naming the limit and when it frees. Each decision is
// counted (Options.Tally, Options.OnRefused) and a refusal audited.

// guard decides the requests to server: none without Backends.
func (f *Front) guard(server string) authz.Guard {
	if f.opts.Backends == nil {
		return authz.Guard{}
	}
	return f.opts.Backends.Guard(server)
}

// sees reports whether c's caller may see server's kind named name.
func (c *client) sees(server string, kind authz.Kind, name string) bool {
	if c.kind == stdioClient {
		return true
	}
	ok, _ := c.f.guard(server).Rules.Allow(c.caller, kind, name)
	return ok
}

// callerOf is the caller of a request of c's: the credential it
// carries, or, on the stdio front, the operator.
func (c *client) callerOf(extra *mcp.RequestExtra) authz.Caller {
	if c.kind == stdioClient {
		return c.caller
	}
	if extra != nil && extra.TokenInfo != nil {
		return tokenCaller(extra.TokenInfo)
	}
	return c.caller
}

// ownerOf is the owner of a result of c's request made with extra
// (results.limit).
func (c *client) ownerOf(extra *mcp.RequestExtra) resultOwner {
	if caller := c.callerOf(extra); caller.Subject != "" {
		return resultOwner{subject: caller.Subject}
	}
	return resultOwner{client: c.id}
}

// tokenCaller is the caller of a request authenticated as info. The
// operator is the static token's TokenInfo only ([access.Operator]): an
// OAuth token is never the operator, whatever its subject. A nil info is a
// caller without a credential: no subject, no scopes.
func tokenCaller(info *auth.TokenInfo) authz.Caller {
	if info == nil {
		return authz.Caller{}
	}
	return authz.Caller{Subject: info.UserID, Scopes: info.Scopes, Operator: access.Operator(info)}
}

// admit decides a request of c's to server's kind named name (the
// server's own name, or a resource's URI). A refusal is counted and
// audited, and returned as the error the client gets: a *jsonrpc.Error
// for a missing scope, a *authz.LimitError past the rate.
func (c *client) admit(ss *mcp.ServerSession, extra *mcp.RequestExtra, server string, kind authz.Kind, name, served string) error {
	f := c.f
	caller := c.callerOf(extra)
	v, err := f.guard(server).Check(caller, kind, name)
	if f.opts.Tally != nil {
		f.opts.Tally.Add(server, caller, v)
	}
	if v == authz.Allowed {
		return nil
	}
	if f.opts.OnRefused != nil {
		f.opts.OnRefused(server, v)
	}
	outcome := audit.OutcomeRateLimited
	if v == authz.Denied {
		outcome = audit.OutcomeDenied
	}
	f.audit.outcome(ss, extra, auditKinds[kind], server, served, outcome)
	// A missing scope is invalid params, as a name the server does not
	// have is, with the refusal's text.
	var denied *authz.DeniedError
	if errors.As(err, &denied) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: denied.Error()}
	}
	return err
}

var auditKinds = map[authz.Kind]string{authz.Tool: audit.KindTool, authz.Prompt: audit.KindPrompt, authz.Resource: audit.KindResource}

// Tracer traces the front's requests and the calls they make to the
// backends; package tracing's Tracer, through a small adapter, is one.
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

// traceMiddleware gives every request of c's a span, when the front
// traces.
func (c *client) traceMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	tr := c.f.opts.Tracer
	if tr == nil {
		return next
	}
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

// traced runs call, a call to server's backend, in a span of its own.
func (f *Front) traced(ctx context.Context, server, method, name string, call func(context.Context) (mcp.Result, error)) (mcp.Result, error) {
	if f.opts.Tracer == nil {
		return call(ctx)
	}
	ctx, end := f.opts.Tracer.Call(ctx, server, method, name)
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
