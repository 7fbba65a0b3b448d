//lint:file-ignore SA1019 sampling and roots are deprecated upstream (SEP-2577) but still forwarded.

package front

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrNoPeer: a supervised server sent a request (elicitation, sampling)
// that no front client can answer: none is connected, several are and
// none or several of them have requests in flight on that server (so the
// front cannot tell which one the request is for), or the one it belongs
// to did not declare the capability.
var ErrNoPeer = errors.New("no front client can answer this request")

// ClientOptionsFor returns the client options of the supervisor of
// server: they forward the server's elicitation/create and
// sampling/createMessage requests to the front session the request
// belongs to (the one with requests in flight on server, or the only one
// connected; see [Front.route]), if it declared the capability, and relay
// the server's log messages and notifications/resources/updated to the
// sessions they belong to. Pass them as conn.Config.Client of that
// supervisor, with [Front.ClientMiddlewareFor] as its ClientMiddleware.
// A request no session can answer fails with an error matching
// [ErrNoPeer], which the server sees as a JSON-RPC error.
func (f *Front) ClientOptionsFor(server string) *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return f.forwardElicit(ctx, server, req.Params)
		},
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return f.forwardSampling(ctx, server, req.Params)
		},
		ResourceUpdatedHandler: func(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if req.Params != nil {
				f.relayUpdate(ctx, server, req.Params.URI)
			}
		},
		LoggingMessageHandler: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			f.relayLog(ctx, server, req.Params)
		},
	}
}

// ClientMiddlewareFor returns the receiving middleware of the supervisor
// of server's clients. It answers the server's roots/list with the roots
// of the front session the request belongs to ([Front.route]), and with
// no roots when none can be named, so that no session's roots reach a
// server on another's behalf. It forwards the server's elicitation and
// sampling requests to that session as they came, on the stream of the
// session's call in flight on server (the SDK's client would otherwise
// check an elicitation's schema more strictly than the protocol does,
// and refuse schemas a direct client accepts). It relays the server's
// progress notifications to the call they report on, under the client's
// own progress token. Pass it as conn.Config.ClientMiddleware.
func (f *Front) ClientMiddlewareFor(server string) []mcp.Middleware {
	return []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch p := req.GetParams().(type) {
			case *mcp.ElicitParams:
				res, err := f.forwardElicit(ctx, server, p)
				return res, wireError(err)
			case *mcp.CreateMessageParams:
				res, err := f.forwardSampling(ctx, server, p)
				return res, wireError(err)
			case *mcp.ProgressNotificationParams:
				if f.relayProgress(ctx, server, p) {
					return nil, nil
				}
				return next(ctx, method, req)
			}
			if method != "roots/list" {
				return next(ctx, method, req)
			}
			res := &mcp.ListRootsResult{Roots: []*mcp.Root{}}
			if b, err := f.bridgeFor(ctx, server); err != nil || b != nil {
				if err != nil {
					return res, nil // no session's roots on another's behalf
				}
				r, err := f.askClient(ctx, b, &mcp.ListRootsParams{})
				if err != nil {
					return nil, wireError(err)
				}
				if roots, ok := r.(*mcp.ListRootsResult); ok {
					return roots, nil
				}
				return nil, fmt.Errorf("the client of mcpfsm answered a roots request with a %T", r)
			}
			if ss, err := f.route(server); err == nil {
				if roots, ok := f.rootsOf(ss); ok {
					res.Roots = roots
				}
			}
			return res, nil
		}
	}}
}

// forwardElicit sends a server's elicitation to the front session it
// belongs to.
func (f *Front) forwardElicit(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if b, err := f.bridgeFor(ctx, server); err != nil || b != nil {
		if err != nil {
			return nil, err
		}
		r, err := f.askClient(ctx, b, p)
		if err != nil {
			return nil, err
		}
		if res, ok := r.(*mcp.ElicitResult); ok {
			return res, nil
		}
		return nil, fmt.Errorf("the client of mcpfsm answered an elicitation with a %T", r)
	}
	ss, err := f.peer(server, "elicitation", func(c *mcp.ClientCapabilities) bool { return c.Elicitation != nil })
	if err != nil {
		return nil, err
	}
	ctx, cancel := f.onStream(ctx, ss, server)
	defer cancel()
	return ss.Elicit(ctx, p)
}

// forwardSampling sends a server's sampling request to the front session
// it belongs to.
func (f *Front) forwardSampling(ctx context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if b, err := f.bridgeFor(ctx, server); err != nil || b != nil {
		if err != nil {
			return nil, err
		}
		r, err := f.askClient(ctx, b, p)
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
	ss, err := f.peer(server, "sampling", hasSampling)
	if err != nil {
		return nil, err
	}
	ctx, cancel := f.onStream(ctx, ss, server)
	defer cancel()
	return ss.CreateMessage(ctx, p)
}

// peer is the front session a request of server belongs to, if it
// declared capability.
func (f *Front) peer(server, capability string, has func(*mcp.ClientCapabilities) bool) (*mcp.ServerSession, error) {
	ss, err := f.route(server)
	if err != nil {
		return nil, err
	}
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || !has(p.Capabilities) {
		return nil, fmt.Errorf("%w: the client of mcpfsm that made the request does not support %s", ErrNoPeer, capability)
	}
	return ss, nil
}
func hasSampling(c *mcp.ClientCapabilities) bool { return c.Sampling != nil }
