package front

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// eraMiddleware is the front server's outermost middleware. It makes
// every answer valid for the era of the client that gets it, whatever
// era the backend that produced it speaks: a resources/read result (the
// front answers reads itself, past the SDK's own handling) says
// "resultType": "complete" to a 2026-07-28 client, and carries a
// cacheScope the protocol allows (a backend's empty one is the default,
// public). Every error it answers with has a JSON-RPC error code: the
// SDK sends a plain Go error with code 0, which no client can classify.
func eraMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, wireError(err)
		}
		if r, ok := res.(*mcp.ReadResourceResult); ok && r != nil {
			if r.CacheScope == "" {
				r.CacheScope = "public"
			}
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil && modern(ss) && r.InputRequests == nil && !r.NeedsInput() {
				return completed(r), nil
			}
		}
		return res, nil
	}
}

// completed returns r marked "resultType": "complete". The SDK keeps that
// mark unexported; its JSON decoding is the one way to set it.
func completed(r *mcp.ReadResourceResult) *mcp.ReadResourceResult {
	out := &mcp.ReadResourceResult{}
	if err := json.Unmarshal([]byte(`{"resultType":"complete","contents":[]}`), out); err != nil {
		return r
	}
	out.Meta, out.Cacheable, out.Contents, out.RequestState = r.Meta, r.Cacheable, r.Contents, r.RequestState
	return out
}

// wireError is err with a JSON-RPC error code: its own if it has one,
// else internal error (-32603), with err's message.
func wireError(err error) error {
	var wire *jsonrpc.Error
	if err == nil || errors.As(err, &wire) {
		return err
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// passInput returns ctx carrying, for the backend, the answers and the
// requestState of a client's round trip that a 2026-07-28 backend's
// input_required result asked for (it reached the client as it came):
// the backend's call continues where its last round left it. A state of
// the front's own bridge never gets here (bridge.Set.Round serves it);
// one that looks like it is the backend's own, unwrapped (see
// bridge.Wrap): the backend is itself a serve.
func passInput(ctx context.Context, responses mcp.InputResponseMap, state string) context.Context {
	return conn.WithInput(ctx, responses, state)
}

// passCapabilities copies the client capabilities a 2026-07-28 request
// declared in its _meta (client) into out, the _meta of the request to
// the backend: a 2026-07-28 backend checks them itself (the SDK's client
// sends its own only when the request has none), and a go-sdk backend
// of the classic era reads them as the request's, so that it asks the
// client only for what it can answer, or refuses with
// MissingRequiredClientCapabilities (-32021) as it would alone.
func passCapabilities(out mcp.Meta, client map[string]any) {
	if caps, ok := client[mcp.MetaKeyClientCapabilities]; ok && caps != nil {
		out[mcp.MetaKeyClientCapabilities] = caps
	}
}

// serverError is a backend's JSON-RPC error as the client gets it: its
// code, message and data as the server sent them (the data of
// MissingRequiredClientCapabilities names what to declare; that of
// resource-not-found, the URI), without the SDK client's wrapping.
func (f *Front) serverError(wire *jsonrpc.Error) error {
	return &jsonrpc.Error{Code: wire.Code, Message: f.opts.Redact(wire.Message), Data: wire.Data}
}

// pinEra makes c's own instance speak c's era to its server, unless the
// server's configuration pins a protocol version: a classic client's
// (stdio, or a 2025-11-25 session) initializes at
// conn.ClassicProtocolVersion, so that a server that sends its requests
// during a call (as servers written for that era do, and may still do
// after answering server/discover) serves it as it would serve it
// alone, and falls back to the stateless protocol only for a server
// that refuses the classic handshake (conn.Config's PreferClassic: the
// era bridge then brings that server's input requests to the client);
// a 2026-07-28 client's asks for conn's default, whose input requests
// come back in the call's result under the server's keys, as they
// would to that client alone.
func (c *client) pinEra(cfg *conn.Config) {
	if cfg.ProtocolVersion == "" && c.kind != subjectClient {
		cfg.PreferClassic = true
	}
}
