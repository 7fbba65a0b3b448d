package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpfsm/mcpfsm/audit"
	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/front/internal/bridge"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readMiddleware answers every resources/read itself, so that a URI the
// front does not list (built from a template, or named by a tool result's
// resource link) still reaches its server.
func (c *client) readMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		rr, ok := req.(*mcp.ReadResourceRequest)
		if method != "resources/read" || !ok || rr.Params == nil {
			return next(ctx, method, req)
		}
		res, err := c.read(passInput(ctx, rr.Params.InputResponses, rr.Params.RequestState), rr.Session, rr.Extra, rr.Params.URI)
		if err != nil {
			return nil, err
		}
		return res, nil
	}
}

// readHandler is the handler of every served resource and template; the
// middleware answers reads before the SDK would call it.
func (c *client) readHandler(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return c.read(passInput(ctx, req.Params.InputResponses, req.Params.RequestState), req.Session, req.Extra, req.Params.URI)
}

// read routes a read of the front URI uri to its server.
func (c *client) read(ctx context.Context, ss *mcp.ServerSession, extra *mcp.RequestExtra, uri string) (*mcp.ReadResourceResult, error) {
	t, ok := c.view.cat.Load().route(uri)
	if !ok {
		return nil, notFound(uri)
	}
	if err := c.admit(ss, extra, t.server, authz.Resource, t.uri, uri); err != nil {
		return nil, wireError(err)
	}
	_, end := c.begin(ctx, ss, t.server, bridge.Of(ctx))
	defer end()
	be, err := c.backend(ctx, t.server)
	if err != nil {
		return nil, c.f.unserved(be, t.server, resourceOp(uri), err)
	}
	defer be.done()
	start := c.f.opts.Clock.Now()
	r, err := traced(ctx, c.f.opts.Tracer, t.server, "resources/read", "", func(ctx context.Context) (mcp.Result, error) {
		return be.cat.ReadResource(ctx, t.server, t.uri)
	})
	res, _ := r.(*mcp.ReadResourceResult)
	end()
	c.f.audit.request(ss, extra, audit.KindResource, t.server, uri, start, nil, nil, err, nil)
	if err != nil {
		return nil, c.f.requestError(ctx, be, resourceOp(uri), err)
	}
	if uri != t.uri {
		for _, r := range res.Contents {
			if r != nil && r.URI == t.uri {
				r.URI = uri // the client reads it under the URI it asked for
			}
		}
	}
	return res, nil
}

func notFound(uri string) error {
	data, _ := json.Marshal(map[string]string{"uri": uri}) // a map of strings always marshals
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, // resource not found (SEP-2164), with data.uri
		Message: fmt.Sprintf(
			"resource %q: no supervised server lists it or a template that matches it; name a server's resource as %s<server>/<uri>",
			uri, RoutePrefix),
		Data: data}
}

// promptHandler routes prompts/get of the prompt served as name.
func (c *client) promptHandler(name string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		listed, ok := c.view.cat.Load().prompt(name)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", name)}
		}
		if err := c.admit(req.Session, req.Extra, listed.Server, authz.Prompt, listed.Raw.Name, name); err != nil {
			return nil, wireError(err)
		}
		_, end := c.begin(ctx, req.Session, listed.Server, bridge.Of(ctx))
		defer end()
		be, err := c.backend(ctx, listed.Server)
		if err != nil {
			return nil, c.f.unserved(be, listed.Server, promptOp(name), err)
		}
		defer be.done()
		p, ok := be.cat.LookupPrompt(listed.Name)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: c.f.describe(be, promptOp(name), nil, "the prompt is no longer available")}
		}
		start := c.f.opts.Clock.Now()
		r, err := traced(ctx, c.f.opts.Tracer, p.Server, "prompts/get", p.Raw.Name, func(ctx context.Context) (mcp.Result, error) {
			if meta := callMeta(req.Params.Meta, nil); len(meta) > 0 {
				ctx = conn.WithCallMeta(ctx, meta)
			}
			return p.Get(passInput(ctx, req.Params.InputResponses, req.Params.RequestState), req.Params.Arguments)
		})
		res, _ := r.(*mcp.GetPromptResult)
		end()
		var args json.RawMessage
		if c.f.audit.log != nil && len(req.Params.Arguments) > 0 {
			args, _ = json.Marshal(req.Params.Arguments)
		}
		c.f.audit.request(req.Session, req.Extra, audit.KindPrompt, p.Server, name, start, args, nil, err, nil)
		if err != nil {
			return nil, c.f.requestError(ctx, be, promptOp(name), err)
		}
		return res, nil
	}
}

// unserved is the error a request gets when no instance of server could
// take it (see client.backend): the server's outage, or why no instance
// of its own could start.
func (f *Front) unserved(be backend, server string, op operation, err error) error {
	if errors.Is(err, errServerDown) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: f.describe(be, op, nil, "")}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: f.refusal(server, op, err)}
}

// requestError is the error the front client gets for a request that
// failed at be: during an outage a JSON-RPC error whose message names
// the server, its state and the next attempt; the server's own error as
// it is.
func (f *Front) requestError(ctx context.Context, be backend, op operation, err error) error {
	var wire *jsonrpc.Error
	switch {
	case errors.Is(err, conn.ErrUnavailable):
		f.awaitLoss(ctx, be)
		if b := bridge.Of(ctx); b != nil && errors.Unwrap(err) != nil {
			b.MarkLost()
		}
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: f.describe(be, op, err, "")}
	case errors.As(err, &wire):
		return f.serverError(wire)
	case ctx.Err() != nil:
		return err
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: f.opts.Redact(fmt.Sprintf("server %q: %s failed: %v", be.server, op.what, err))}
}

// supervisor is be's supervisor, or an error naming the server.
func (be backend) supervisor() (*conn.Supervisor, error) {
	if be.sup == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("server %q is not supervised by mcpfsm", be.server)}
	}
	return be.sup, nil
}

// subscribe forwards resources/subscribe to the resource's instance.
// During an outage the subscription is kept, and sent when the server is
// back: the client is subscribed either way.
func (c *client) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	t, ok := c.view.cat.Load().route(uri)
	if !ok {
		return notFound(uri)
	}
	be, err := c.backend(ctx, t.server)
	if err != nil {
		return c.f.unserved(be, t.server, resourceOp(uri), err)
	}
	defer be.done()
	sup, err := be.supervisor()
	if err != nil {
		return err
	}
	first := c.subs.add(t, uri)
	if first && !be.own && !c.f.subscribeShared(t) {
		return nil // another client holds the shared subscription
	}
	err = sup.Subscribe(ctx, t.uri)
	switch {
	case err == nil:
	case errors.Is(err, conn.ErrUnavailable):
		c.f.opts.Logger.Info("resource subscription kept: it is sent when the server is back", "server", t.server, "uri", t.uri)
	default:
		if c.subs.remove(t, uri) {
			if be.own || c.f.unsubscribeShared(t) {
				_ = sup.Unsubscribe(ctx, t.uri)
			}
		}
		return err
	}
	return nil
}

// subscribeShared counts a client's subscription to a shared resource,
// and reports whether it is the first.
func (f *Front) subscribeShared(t target) bool {
	f.subs.mu.Lock()
	defer f.subs.mu.Unlock()
	if f.subs.n == nil {
		f.subs.n = map[target]int{}
	}
	f.subs.n[t]++
	return f.subs.n[t] == 1
}

// unsubscribeShared uncounts one, and reports whether it was the last.
func (f *Front) unsubscribeShared(t target) bool {
	f.subs.mu.Lock()
	defer f.subs.mu.Unlock()
	if f.subs.n[t] == 0 {
		return false
	}
	f.subs.n[t]--
	if f.subs.n[t] == 0 {
		delete(f.subs.n, t)
		return true
	}
	return false
}

// unsubscribe ends a subscription; the instance's ends with the last one
// of its clients to the resource.
func (c *client) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	t, ok := c.view.cat.Load().route(req.Params.URI)
	if !ok || !c.subs.remove(t, req.Params.URI) {
		return nil
	}
	own := c.isolated(t.server)
	if !own && !c.f.unsubscribeShared(t) {
		return nil
	}
	var sup *conn.Supervisor
	if own {
		c.mu.Lock()
		in := c.instances[t.server]
		c.mu.Unlock()
		if in != nil {
			sup = in.Running()
		}
	} else if c.f.opts.Backends != nil {
		sup, _ = c.f.opts.Backends.Supervisor(t.server)
	}
	if sup == nil {
		return nil // the server is gone, and its subscriptions with it
	}
	if err := sup.Unsubscribe(ctx, t.uri); err != nil && !errors.Is(err, conn.ErrUnavailable) {
		return err
	}
	return nil
}

// complete forwards completion/complete to the server of the prompt or
// resource template it refers to.
func (c *client) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	params := *req.Params
	params.Meta = nil
	ref := *params.Ref
	var t target
	var op operation
	view := c.view.cat.Load()
	switch ref.Type {
	case "ref/prompt":
		p, ok := view.prompt(ref.Name)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", ref.Name)}
		}
		t, op, ref.Name = target{p.Server, p.Raw.Name}, promptOp(ref.Name), p.Raw.Name
	case "ref/resource":
		var ok bool
		if t, ok = view.routeTemplate(ref.URI); !ok {
			return nil, notFound(ref.URI)
		}
		op, ref.URI = resourceOp(ref.URI), t.uri
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown reference type %q", ref.Type)}
	}
	params.Ref = &ref
	_, end := c.begin(ctx, req.Session, t.server, nil)
	defer end()
	be, err := c.backend(ctx, t.server)
	if err != nil {
		return nil, c.f.unserved(be, t.server, op, err)
	}
	defer be.done()
	sup, err := be.supervisor()
	if err != nil {
		return nil, err
	}
	var res *mcp.CompleteResult
	err = sup.WithSession(ctx, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		res, err = cs.Complete(ctx, &params)
		return err
	})
	if err != nil {
		op.what = "completion for " + op.what
		return nil, c.f.requestError(ctx, be, op, err)
	}
	return res, nil
}
