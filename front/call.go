package front

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpfsm/mcpfsm/audit"
	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/front/internal/bridge"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// handler routes a call of the tool served to c as name to the instance
// that publishes it now: c's own, or the shared one. The registry is
// read at call time, so a call after a reconnect goes to the new
// session.
func (c *client) handler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		public := c.publicTool(name)
		server, raw, _ := conn.SplitToolName(public)
		if err := c.admit(req.Session, req.Extra, server, authz.Tool, raw, name); err != nil {
			var limited *authz.LimitError
			if errors.As(err, &limited) {
				return errorResult(err.Error()), nil
			}
			return nil, err
		}
		// In flight from here: a server that starts for the call (and
		// asks for roots) asks on its stream.
		in, end := c.begin(ctx, req.Session, server, bridge.Of(ctx))
		defer end()
		be, err := c.backend(ctx, server)
		if errors.Is(err, errServerDown) {
			if st, ok := be.status(); ok && st.State == conn.NeedsAuthorization {
				c.askInCall(ctx, be)
			}
			return errorResult(c.f.describe(be, toolOp(name), nil, "")), nil
		}
		if err != nil {
			return errorResult(c.f.refusal(server, toolOp(name), err)), nil
		}
		defer be.done()
		t, ok := be.tools.Lookup(public)
		if !ok {
			why := "the tool is no longer available"
			if st, sok := be.status(); sok && st.State == conn.NeedsAuthorization {
				// The client's own instance waits for its caller's sign-in.
				c.askInCall(ctx, be)
				why = ""
			}
			return errorResult(c.f.describe(be, toolOp(name), nil, why)), nil
		}
		return c.invoke(ctx, req, name, t, be, in, end)
	}
}

// invoke calls t, served as name, for req, and says what the client gets.
// The call is in and ends with end.
func (c *client) invoke(ctx context.Context, req *mcp.CallToolRequest, name string, t conn.Tool, be backend,
	in *inflight, end func()) (*mcp.CallToolResult, error) {
	var args any
	if req.Params.Arguments != nil {
		args = req.Params.Arguments
	}
	f := c.f
	start := f.opts.Clock.Now()
	b := bridge.Of(ctx)
	res, err := c.callTool(ctx, req, t, args)
	if err == nil {
		c.settleLogs(ctx, in)
	}
	end()
	res, cut := f.results.limit(c.ownerOf(req.Extra), t.Server, name, res) // limits.go
	f.audit.request(req.Session, req.Extra, audit.KindTool, t.Server, name, start, req.Params.Arguments, res, err, cut.record)
	var wire *jsonrpc.Error
	switch {
	case err == nil:
		return res, nil
	case errors.Is(err, conn.ErrUnavailable):
		f.awaitLoss(ctx, be)
		if errors.Unwrap(err) != nil && b != nil {
			b.MarkLost()
		}
		return errorResult(f.describe(be, toolOp(name), err, "")), nil
	case errors.As(err, &wire):
		return nil, f.serverError(wire) // the server's own answer, such as invalid params
	case ctx.Err() != nil:
		return nil, err // the client cancelled: nobody reads the result
	}
	return errorResult(f.opts.Redact(fmt.Sprintf("server %q: tool %q failed: %v", t.Server, name, err))), nil
}

// callTool calls t for req, in a span of its own when the front traces.
// The call carries the client's trace context, and, when its client
// asked for progress, a token of the front's own (see progressTokens).
func (c *client) callTool(ctx context.Context, req *mcp.CallToolRequest, t conn.Tool, args any) (res *mcp.CallToolResult, err error) {
	if tr := c.f.opts.Tracer; tr != nil {
		var end func(string, error)
		ctx, end = tr.Call(ctx, t.Server, "tools/call", t.Raw.Name)
		defer func() { end(string(conn.ClassifyCall(res, err)), err) }()
	}
	var more mcp.Meta
	token := req.Params.GetProgressToken()
	var relayed <-chan struct{}
	if token != nil && req.Session != nil {
		ours, route, forget := c.f.progress.add(ctx, c.calls, t.Server, req.Session, token)
		defer forget()
		more, relayed = mcp.Meta{"progressToken": ours}, route.relayed
	}
	if meta := callMeta(req.Params.Meta, more); len(meta) > 0 {
		ctx = conn.WithCallMeta(ctx, meta)
	}
	ctx = passInput(ctx, req.Params.InputResponses, req.Params.RequestState)
	res, err = t.Call(ctx, args)
	if err == nil && relayed != nil {
		quietFor(ctx, c.f.opts.Clock, relayed)
	}
	return res, err
}

// settleLogs waits, after the server answered a call of c's, for the
// log messages of the call when c asked for them (set a logging level):
// the SDK hands a server's answer to the caller at once, but its
// notifications (sent before the answer) to the middleware only in
// turn, and a message the server sent during the call should still
// reach the client before the result, on the call's stream.
func (c *client) settleLogs(ctx context.Context, in *inflight) {
	if c.levels.get() == "" {
		return
	}
	quietFor(ctx, c.f.opts.Clock, in.logged)
}

// lossWait bounds how long a call whose connection ended waits for its
// supervisor to register the loss.
const lossWait = 2 * time.Second

// awaitLoss waits, at most lossWait, for server to leave the established
// state: a call that found its connection ended (or saw it end) usually
// returns before the supervisor has taken note, and the error should name
// the state the loss leads to, not the one it ends.
func (f *Front) awaitLoss(ctx context.Context, be backend) {
	if _, ok := be.status(); !ok {
		return
	}
	timer := f.opts.Clock.Timer(lossWait)
	defer timer.Stop()
	for {
		moved := f.transitioned() // before reading the state: no transition is missed
		if st, ok := be.status(); !ok || st.State != conn.Established {
			return
		}
		select {
		case <-moved:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}
