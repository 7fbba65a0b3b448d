package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/mcpfsm/mcpfsm/audit"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readMiddleware answers every resources/read itself, so that a URI the
// front does not list (built from a template, or named by a tool result's
// resource link) still reaches its server.
func (f *Front) readMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		rr, ok := req.(*mcp.ReadResourceRequest)
		if method != "resources/read" || !ok || rr.Params == nil {
			return next(ctx, method, req)
		}
		res, err := f.read(ctx, rr.Session, rr.Extra, rr.Params.URI)
		if err != nil {
			return nil, err
		}
		return res, nil
	}
}

// readHandler is the handler of every served resource and template; the
// middleware answers reads before the SDK would call it.
func (f *Front) readHandler(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return f.read(ctx, req.Session, req.Extra, req.Params.URI)
}

// read routes a read of the front URI uri to its server.
func (f *Front) read(ctx context.Context, ss *mcp.ServerSession, extra *mcp.RequestExtra, uri string) (*mcp.ReadResourceResult, error) {
	t, ok := f.view.Load().route(uri)
	if !ok {
		return nil, notFound(uri)
	}
	start := f.opts.Clock.Now()
	end := f.begin(ctx, ss, t.server)
	res, err := f.opts.Catalog.ReadResource(ctx, t.server, t.uri)
	end()
	f.audited(ss, extra, audit.KindResource, t.server, uri, start, nil, nil, err)
	if err != nil {
		return nil, f.requestError(ctx, t.server, resourceOp(uri), err)
	}
	if uri != t.uri {
		for _, c := range res.Contents {
			if c != nil && c.URI == t.uri {
				c.URI = uri // the client reads it under the URI it asked for
			}
		}
	}
	return res, nil
}

func notFound(uri string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, // resource not found (SEP-2164)
		Message: fmt.Sprintf(
			"resource %q: no supervised server lists it or a template that matches it; name a server's resource as %s<server>/<uri>",
			uri, RoutePrefix)}
}

// promptHandler routes prompts/get of the prompt served as name.
func (f *Front) promptHandler(name string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		public := f.view.Load().publicPrompt(name)
		p, ok := f.opts.Catalog.LookupPrompt(public)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: f.describeOp(serverOf(public), promptOp(name), nil, "the prompt is no longer available")}
		}
		start := f.opts.Clock.Now()
		end := f.begin(ctx, req.Session, p.Server)
		res, err := p.Get(ctx, req.Params.Arguments)
		end()
		var args json.RawMessage
		if f.opts.Audit != nil && len(req.Params.Arguments) > 0 {
			args, _ = json.Marshal(req.Params.Arguments)
		}
		f.audited(req.Session, req.Extra, audit.KindPrompt, p.Server, name, start, args, nil, err)
		if err != nil {
			return nil, f.requestError(ctx, p.Server, promptOp(name), err)
		}
		return res, nil
	}
}

// requestError is the error the front client gets for a request that
// failed at server: during an outage a JSON-RPC error whose message
// names the server, its state and the next attempt; the server's own
// error as it is.
func (f *Front) requestError(ctx context.Context, server string, op operation, err error) error {
	var wire *jsonrpc.Error
	switch {
	case errors.Is(err, conn.ErrUnavailable):
		f.awaitLoss(ctx, server)
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: f.describeOp(server, op, err, "")}
	case errors.As(err, &wire):
		return err
	case ctx.Err() != nil:
		return err
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("server %q: %s failed: %v", server, op.what, err)}
}

// supervisor is the supervisor of server, or an error naming it.
func (f *Front) supervisor(server string) (*conn.Supervisor, error) {
	if f.opts.Supervisor != nil {
		if s, ok := f.opts.Supervisor(server); ok && s != nil {
			return s, nil
		}
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("server %q is not supervised by mcpfsm", server)}
}

// subscriptions are the front clients' resource subscriptions, by the
// server's resource: the supervisor holds one subscription per resource
// (re-sent at every reconnect) however many front URIs and sessions ask.
type subscriptions struct {
	mu sync.Mutex
	m  map[target]map[string]map[*mcp.ServerSession]bool // resource -> front URI -> sessions
}

func (s *subscriptions) init() { s.m = map[target]map[string]map[*mcp.ServerSession]bool{} }

// add records a subscription and reports whether it is the resource's first.
func (s *subscriptions) add(t target, uri string, ss *mcp.ServerSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := len(s.m[t]) == 0
	if s.m[t] == nil {
		s.m[t] = map[string]map[*mcp.ServerSession]bool{}
	}
	if s.m[t][uri] == nil {
		s.m[t][uri] = map[*mcp.ServerSession]bool{}
	}
	s.m[t][uri][ss] = true
	return first
}

// remove forgets a subscription and reports whether it was the
// resource's last.
func (s *subscriptions) remove(t target, uri string, ss *mcp.ServerSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[t] == nil {
		return false
	}
	delete(s.m[t][uri], ss)
	if len(s.m[t][uri]) == 0 {
		delete(s.m[t], uri)
	}
	if len(s.m[t]) == 0 {
		delete(s.m, t)
		return true
	}
	return false
}

// fronts are the front URIs subscribed to the resource t.
func (s *subscriptions) fronts(t target) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for uri := range s.m[t] {
		out = append(out, uri)
	}
	return out
}

// subscribe forwards resources/subscribe to the resource's supervisor.
// During an outage the subscription is kept, and sent when the server is
// back: the client is subscribed either way.
func (f *Front) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	t, ok := f.view.Load().route(uri)
	if !ok {
		return notFound(uri)
	}
	sup, err := f.supervisor(t.server)
	if err != nil {
		return err
	}
	first := f.subs.add(t, uri, req.Session)
	err = sup.Subscribe(ctx, t.uri)
	switch {
	case err == nil:
	case errors.Is(err, conn.ErrUnavailable):
		f.opts.Logger.Info("resource subscription kept: it is sent when the server is back", "server", t.server, "uri", t.uri, "err", err)
	default:
		if f.subs.remove(t, uri, req.Session) || first {
			_ = sup.Unsubscribe(ctx, t.uri)
		}
		return err
	}
	return nil
}

// unsubscribe ends a subscription; the supervisor's ends with the last
// front subscription to the resource.
func (f *Front) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	t, ok := f.view.Load().route(req.Params.URI)
	if !ok || !f.subs.remove(t, req.Params.URI, req.Session) {
		return nil
	}
	sup, err := f.supervisor(t.server)
	if err != nil {
		return nil // the server is gone, and its subscriptions with it
	}
	if err := sup.Unsubscribe(ctx, t.uri); err != nil && !errors.Is(err, conn.ErrUnavailable) {
		return err
	}
	return nil
}

// relayUpdate tells the front clients subscribed to a server's resource
// that it was updated, under each front URI they subscribed with.
func (f *Front) relayUpdate(ctx context.Context, server, uri string) {
	for _, front := range f.subs.fronts(target{server, uri}) {
		if err := f.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: front}); err != nil {
			f.opts.Logger.Warn("resource update not relayed: "+err.Error(), "server", server, "uri", uri)
		}
	}
}

// complete forwards completion/complete to the server of the prompt or
// resource template it refers to.
func (f *Front) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	params := *req.Params
	params.Meta = nil
	ref := *params.Ref
	var t target
	var op operation
	switch ref.Type {
	case "ref/prompt":
		p, ok := f.opts.Catalog.LookupPrompt(f.view.Load().publicPrompt(ref.Name))
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", ref.Name)}
		}
		t, op, ref.Name = target{p.Server, p.Raw.Name}, promptOp(ref.Name), p.Raw.Name
	case "ref/resource":
		var ok bool
		if t, ok = f.view.Load().routeTemplate(ref.URI); !ok {
			return nil, notFound(ref.URI)
		}
		op, ref.URI = resourceOp(ref.URI), t.uri
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown reference type %q", ref.Type)}
	}
	params.Ref = &ref
	sup, err := f.supervisor(t.server)
	if err != nil {
		return nil, err
	}
	var res *mcp.CompleteResult
	defer f.begin(ctx, req.Session, t.server)()
	err = sup.WithSession(ctx, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		res, err = cs.Complete(ctx, &params)
		return err
	})
	if err != nil {
		op.what = "completion for " + op.what
		return nil, f.requestError(ctx, t.server, op, err)
	}
	return res, nil
}
