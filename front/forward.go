//lint:file-ignore SA1019 sampling, roots and logging are deprecated upstream (SEP-2577) but still forwarded.

package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpfsm/mcpfsm/front/internal/bridge"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A backend's requests (elicitation, sampling, roots) and notifications
// (log messages, progress, resource updates) go to the one client they
// belong to. A per-client instance has one client, so that is its own:
// during a call, on that call's stream (a modern client's as an input
// request of the call's result). A shared instance's go to the client
// whose call is in flight on the server when exactly one client has
// one; on the stdio front, to its one client; otherwise no client can
// be named, and a request is refused with an error matching ErrNoPeer.

// ErrNoPeer: a supervised server sent a request (elicitation, sampling)
// that no front client can answer: the server is shared by several
// clients and no single call of theirs explains the request, or the
// client it belongs to cannot take it (it did not declare the
// capability, or speaks 2026-07-28 and has no call in flight to carry
// it).
var ErrNoPeer = errors.New("no front client can answer this request")

// ClientOptionsFor returns the client options of server's shared
// instance: they forward the server's elicitation/create and
// sampling/createMessage requests to the front client they belong to
// (see [ErrNoPeer]), and relay the server's log messages and
// notifications/resources/updated to the clients they belong to. Pass
// them as conn.Config.Client of that supervisor, with
// [Front.ClientMiddlewareFor] as its ClientMiddleware. A request no
// client can answer fails with an error matching [ErrNoPeer], which the
// server sees as a JSON-RPC error.
func (f *Front) ClientOptionsFor(server string) *mcp.ClientOptions {
	return f.clientOptions(server, nil)
}

// ClientMiddlewareFor returns the receiving middleware of server's shared
// instance's clients. It forwards the server's elicitation and sampling
// requests to the client they belong to as they came, on the stream of
// that client's call in flight on server (the SDK's client would
// otherwise check an elicitation's schema more strictly than the
// protocol does, and refuse schemas a direct client accepts), and the
// answer back as the client gave it. It relays the server's progress
// notifications to the call they report on, under the client's own
// progress token. A shared server's roots/list is answered with the
// roots its configuration declares, never with a client's (on the stdio
// front, with its one client's). Pass it as conn.Config.ClientMiddleware.
func (f *Front) ClientMiddlewareFor(server string) []mcp.Middleware {
	return f.clientMiddleware(server, nil)
}

// clientOptions are a per-client instance's client options.
func (c *client) clientOptions(server string) *mcp.ClientOptions { return c.f.clientOptions(server, c) }

// clientMiddleware is a per-client instance's receiving middleware.
func (c *client) clientMiddleware(server string) []mcp.Middleware {
	return c.f.clientMiddleware(server, c)
}

// clientOptions are the client options of an instance of server: the
// shared one when only is nil, only's own otherwise.
func (f *Front) clientOptions(server string, only *client) *mcp.ClientOptions {
	return &mcp.ClientOptions{
		// A 2026-07-28 server's input_required result goes to the client
		// as it came (see passInput), never answered here under keys the
		// client does not see.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return f.forwardElicit(ctx, server, only, req.Params)
		},
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return f.forwardSampling(ctx, server, only, req.Params)
		},
		ResourceUpdatedHandler: func(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if req.Params != nil {
				f.relayUpdate(ctx, server, only, req.Params.URI)
			}
		},
		LoggingMessageHandler: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			f.relayLog(ctx, server, only, req.Params)
		},
	}
}

// clientMiddleware is the receiving middleware of an instance of server.
func (f *Front) clientMiddleware(server string, only *client) []mcp.Middleware {
	return []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch p := req.GetParams().(type) {
			case *mcp.ElicitParams:
				res, err := f.forwardElicit(ctx, server, only, p)
				return res, wireError(err)
			case *mcp.CreateMessageParams:
				res, err := f.forwardSampling(ctx, server, only, p)
				return res, wireError(err)
			case *mcp.ProgressNotificationParams:
				if f.relayProgress(ctx, server, only, p) {
					return nil, nil
				}
				return next(ctx, method, req)
			}
			if method == "roots/list" {
				return f.answerRoots(ctx, server, only, func() (mcp.Result, error) { return next(ctx, method, req) })
			}
			return next(ctx, method, req)
		}
	}}
}

// relayProgress sends a server's progress notification to the client
// whose call it is about, under the client's token, on that call's
// stream. It reports whether the token was one of the front's.
func (f *Front) relayProgress(ctx context.Context, server string, only *client, p *mcp.ProgressNotificationParams) bool {
	if p == nil {
		return false
	}
	var owner *calls
	if only != nil {
		owner = only.calls
	}
	r, ok := f.progress.lookup(p.ProgressToken, server, owner)
	if !ok {
		return false
	}
	m := *p
	m.Meta = nil
	m.ProgressToken = r.token
	err := r.ss.NotifyProgress(withValues(ctx, r.ctx), &m)
	if err != nil {
		// The call may have ended meanwhile: the session's other stream
		// still takes it.
		err = r.ss.NotifyProgress(ctx, &m)
	}
	if err != nil {
		f.opts.Logger.Debug("progress not relayed: "+err.Error(), "server", server)
	}
	select {
	case r.relayed <- struct{}{}:
	default:
	}
	return true
}

// peer is the client a request of server belongs to, and its call in
// flight there if it has one: the bridged call the request's context
// carries (a backend on 2026-07-28 asks in its call's result, and the
// SDK's client answers under the call's context); else, for a
// per-client instance (only set), its client and that client's newest
// call on the server; else the one client with calls in flight there.
func (f *Front) peer(ctx context.Context, server string, only *client) (*client, *inflight, error) {
	if b := bridge.Of(ctx); b != nil {
		if owner, ok := b.Owner().(*client); ok && (only == nil || owner == only) {
			return owner, &inflight{ctx: b.Context(), b: b}, nil
		}
	}
	if only != nil && only.kind == subjectClient {
		// The requests of one subject may be several clients': without a
		// session, only the one call with the backend can be this one's.
		n, in := only.calls.withBackend(server)
		if n > 1 {
			return nil, nil, fmt.Errorf("%w: %d calls of 2026-07-28 clients are in flight on server %q, which they share as one caller, and it cannot tell which one this request is for",
				ErrNoPeer, n, server)
		}
		return only, in, nil
	}
	if only != nil {
		return only, only.calls.newest(server), nil
	}
	f.mu.Lock()
	owner := f.shared
	f.mu.Unlock()
	var who *client
	var newest *inflight
	calls, clients := 0, 0
	for _, c := range f.all() {
		n, in := c.calls.count(server)
		if n == 0 {
			continue
		}
		calls, clients, who, newest = calls+n, clients+1, c, in
	}
	switch {
	case clients == 1:
		return who, newest, nil
	case clients > 1:
		return nil, nil, fmt.Errorf("%w: %d calls of %d clients of mcpfsm are in flight on server %q, which they share, and it cannot tell which one this request is for",
			ErrNoPeer, calls, clients, server)
	case owner != nil:
		return owner, nil, nil
	}
	return nil, nil, fmt.Errorf("%w: no call of a client of mcpfsm is in flight on server %q, which its clients share", ErrNoPeer, server)
}

// bridgeFor is the bridged call that carries a request to c, if any.
func bridgeFor(in *inflight) *bridge.Call {
	if in == nil {
		return nil
	}
	return in.b
}

// sessionFor is the session a request to c goes on: that of its call,
// or its own. A modern client over HTTP has none.
func (c *client) sessionFor(in *inflight) *mcp.ServerSession {
	if in != nil && in.ss != nil {
		return in.ss
	}
	return c.session()
}

// capable is the session a request needing capability goes on, or an
// error naming why there is none.
func (c *client) capable(in *inflight, server, capability string, has func(*mcp.ClientCapabilities) bool) (*mcp.ServerSession, error) {
	ss := c.sessionFor(in)
	if c.kind == subjectClient || ss == nil || modern(ss) {
		return nil, fmt.Errorf("%w: the client of mcpfsm speaks 2026-07-28 and has no call in flight on server %q to carry a %s request", ErrNoPeer, server, capability)
	}
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || !has(p.Capabilities) {
		return nil, fmt.Errorf("%w: the client of mcpfsm that made the request does not support %s", ErrNoPeer, capability)
	}
	return ss, nil
}

// forwardElicit sends a server's elicitation to the client it belongs
// to, and returns the client's answer as the client gave it.
func (f *Front) forwardElicit(ctx context.Context, server string, only *client, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	c, in, err := f.peer(ctx, server, only)
	if err != nil {
		return nil, err
	}
	if b := bridgeFor(in); b != nil {
		r, err := b.Ask(ctx, server, p)
		if err != nil {
			return nil, err
		}
		if res, ok := r.(*mcp.ElicitResult); ok {
			return res, nil
		}
		return nil, fmt.Errorf("the client of mcpfsm answered an elicitation with a %T", r)
	}
	ss, err := c.capable(in, server, "elicitation", func(c *mcp.ClientCapabilities) bool { return c.Elicitation != nil })
	if err != nil {
		return nil, err
	}
	sctx, cancel := onStream(ctx, in)
	defer cancel()
	k := &keptAnswer{}
	res, err := ss.Elicit(context.WithValue(sctx, keptKey{}, k), p)
	if k.res != nil {
		// The SDK checks the answer against the schema and fills in its
		// defaults; the server gets what the client sent, as a direct
		// client's server would.
		return k.res, nil
	}
	return res, err
}

// forwardSampling sends a server's sampling request to the client it
// belongs to.
func (f *Front) forwardSampling(ctx context.Context, server string, only *client, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	c, in, err := f.peer(ctx, server, only)
	if err != nil {
		return nil, err
	}
	if b := bridgeFor(in); b != nil {
		r, err := b.Ask(ctx, server, p)
		if err != nil {
			return nil, err
		}
		switch res := r.(type) {
		case *mcp.CreateMessageResult:
			return res, nil
		case *mcp.CreateMessageWithToolsResult:
			if len(res.Content) == 1 {
				return &mcp.CreateMessageResult{Meta: res.Meta, Content: res.Content[0], Model: res.Model, Role: res.Role, StopReason: res.StopReason}, nil
			}
		}
		return nil, fmt.Errorf("the client of mcpfsm answered a sampling request with a %T, not one message", r)
	}
	ss, err := c.capable(in, server, "sampling", func(c *mcp.ClientCapabilities) bool { return c.Sampling != nil })
	if err != nil {
		return nil, err
	}
	sctx, cancel := onStream(ctx, in)
	defer cancel()
	return ss.CreateMessage(sctx, p)
}

// answerRoots answers a server's roots/list. A shared server over HTTP,
// and a classic client's instance, get what their supervisor holds
// (next): the configured roots, or the client's as it last read them. A
// modern client's instance gets the roots of the client whose call is in
// flight, asked of it during that call every time the server asks (an
// input request of the call's round): a 2026-07-28 client has no
// session, so no list it gave before is known to be this one's. The
// answer is also kept as the client's, for the start of its next
// instance (see askRoots).
func (f *Front) answerRoots(ctx context.Context, server string, only *client, next func() (mcp.Result, error)) (mcp.Result, error) {
	f.mu.Lock()
	owned := only != nil || f.shared != nil
	f.mu.Unlock()
	if !owned {
		return next()
	}
	c, in, err := f.peer(ctx, server, only)
	if err != nil {
		return next()
	}
	if ss := c.sessionFor(in); c.kind != subjectClient && (ss == nil || !modern(ss)) {
		return next()
	}
	b := bridgeFor(in)
	if b == nil {
		return &mcp.ListRootsResult{Roots: []*mcp.Root{}}, nil
	}
	return c.roots.from(ctx, b, server)
}

// relayLog sends a server's log message, with the server's name in front
// of its logger name, to the client it belongs to (see [ErrNoPeer]). A
// message no client can be named for is dropped, not sent to every
// client. The SDK drops it for a session that set no level or a higher
// one.
func (f *Front) relayLog(ctx context.Context, server string, only *client, p *mcp.LoggingMessageParams) {
	if p == nil {
		return
	}
	c, in, err := f.peer(ctx, server, only)
	if err != nil {
		f.opts.Logger.Debug("log message not relayed: "+err.Error(), "server", server)
		return
	}
	ss := c.sessionFor(in)
	if ss == nil {
		return // a modern client with no call in flight: nothing carries it
	}
	m := *p
	m.Meta = nil
	if m.Logger == "" {
		m.Logger = server
	} else {
		m.Logger = server + "/" + m.Logger
	}
	// On the stream of the call it is about, if any; the session's other
	// stream if that call has ended meanwhile.
	sctx, cancel := onStream(ctx, in)
	err = ss.Log(sctx, &m)
	cancel()
	if err != nil {
		err = ss.Log(ctx, &m)
	}
	if err != nil {
		f.opts.Logger.Debug("log message not relayed: "+err.Error(), "server", server)
		return
	}
	if in != nil {
		select {
		case in.logged <- struct{}{}: // the call waits for its messages (settleLogs)
		default:
		}
	}
}

// keptKey carries a *keptAnswer to keepAnswer.
type keptKey struct{}

// keptAnswer is an elicitation's answer as the client sent it.
type keptAnswer struct{ res *mcp.ElicitResult }

// keepAnswer is the sending middleware of every client's server: it
// keeps a copy of an elicitation's answer as the client sent it, before
// the SDK checks and completes it, for the context that asks.
func keepAnswer(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		k, ok := ctx.Value(keptKey{}).(*keptAnswer)
		if !ok || err != nil {
			return res, err
		}
		if r, ok := res.(*mcp.ElicitResult); ok && r != nil {
			cp := *r
			if r.Content != nil {
				cp.Content = nil
				if b, err := json.Marshal(r.Content); err == nil && json.Unmarshal(b, &cp.Content) == nil {
					k.res = &cp
				}
			} else {
				k.res = &cp
			}
		}
		return res, err
	}
}

// relayUpdate tells the clients subscribed to a server's resource that
// it was updated, under each front URI they subscribed with: only's, for
// a per-client instance; every client's that the shared instance
// serves, for a shared one.
func (f *Front) relayUpdate(ctx context.Context, server string, only *client, uri string) {
	t := target{server, uri}
	clients := []*client{only}
	if only == nil {
		clients = f.all()
	}
	for _, c := range clients {
		if only == nil && c.isolated(server) {
			continue
		}
		for _, front := range c.subs.uris(t) {
			if err := c.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: front}); err != nil {
				f.opts.Logger.Warn("resource update not relayed: "+err.Error(), "server", server, "uri", uri)
			}
		}
	}
}
