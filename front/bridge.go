package front

import (
	"context"
	"log/slog"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/front/internal/bridge"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A modern client's calls are bridged (package front/internal/bridge):
// each client has a bridge.Set of its own, so another client's
// requestState names nothing in it.

// Bounds of the wait for a client's next round trip: a person may take a
// while to answer an elicitation, but a round the client abandons holds
// its backend call, and a shared backend serves every client.
const (
	inputWait       = 5 * time.Minute
	sharedInputWait = 30 * time.Second
)

// bridges are one client's bridged calls (a bridge.Set, whose methods
// it has) and the middleware that bridges the client's modern requests.
// The bridge.Set holds its own lock; bridges adds no state after
// newBridges. The client makes one at its start, adds its middleware to
// the client's server, and closes it when the client ends; the relays of
// the servers' requests find a call's client by the set's Owner.
type bridges struct {
	*bridge.Set
	subject bool // the client is a 2026-07-28 subject's: every request of it is modern
}

// newBridges makes the bridged calls of the client owner. shared reports
// whether a server is shared with other clients (its round trips wait
// less), and gone is told of each call lost.
func newBridges(owner any, clk clock.Clock, logger *slog.Logger, subject bool, shared func(server string) bool, gone func(*bridge.Call)) *bridges {
	return &bridges{subject: subject, Set: bridge.NewSet(bridge.Options{Clock: clk, Logger: logger, Owner: owner,
		// The requests a backend makes at once arrive within moments of
		// each other, on the real clock whatever the front's.
		GatherClock: clock.New(),
		Wait: func(server string) time.Duration {
			if server != "" && shared(server) {
				return sharedInputWait // a shared backend's other clients wait too
			}
			return inputWait
		},
		// A lost call is over for the client, and no request of the
		// backend is its any more, though it may take a moment to end
		// on the backend.
		Gone: gone,
	})}
}

// modern reports whether ss speaks 2026-07-28 or later: it takes a
// server's requests during a call only as input requests.
func modern(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p == nil || p.ProtocolVersion >= conn.StatelessProtocolVersion
}

// middleware bridges the calls of a modern client: a tools/call,
// prompts/get or resources/read runs on the backend across the client's
// round trips; a classic client's goes on as it came.
func (b *bridges) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if !b.subject && (ss == nil || !modern(ss)) {
			return next(ctx, method, req)
		}
		var name, state string
		var answers mcp.InputResponseMap
		switch p := req.GetParams().(type) {
		case *mcp.CallToolParamsRaw:
			name, state, answers = p.Name, p.RequestState, p.InputResponses
		case *mcp.GetPromptParams:
			name, state, answers = p.Name, p.RequestState, p.InputResponses
		case *mcp.ReadResourceParams:
			name, state, answers = p.URI, p.RequestState, p.InputResponses
		default:
			return next(ctx, method, req)
		}
		caps := bridge.CapabilitiesOf(req.GetParams().GetMeta())
		return b.Round(ctx, method, name, state, answers, caps, func(ctx context.Context) (mcp.Result, error) {
			// A backend's own state goes back as it made it, and its next
			// one reaches the client marked if it could be taken for a
			// bridged call's (a serve behind this one).
			setRequestState(req.GetParams(), bridge.Unwrap(state))
			res, err := next(ctx, method, req)
			if s := requestState(res); s != "" {
				setRequestState(res, bridge.Wrap(s))
			}
			return res, err
		})
	}
}

// requestState is the requestState of a result (or params) of the
// methods a round trip continues, or "".
func requestState(x any) string {
	switch x := x.(type) {
	case *mcp.CallToolResult:
		if x != nil {
			return x.RequestState
		}
	case *mcp.GetPromptResult:
		if x != nil {
			return x.RequestState
		}
	case *mcp.ReadResourceResult:
		if x != nil {
			return x.RequestState
		}
	}
	return ""
}

// setRequestState sets the requestState of a result or params of the
// methods a round trip continues (never nil); it ignores anything else.
func setRequestState(x any, state string) {
	switch x := x.(type) {
	case *mcp.CallToolResult:
		x.RequestState = state
	case *mcp.GetPromptResult:
		x.RequestState = state
	case *mcp.ReadResourceResult:
		x.RequestState = state
	case *mcp.CallToolParamsRaw:
		x.RequestState = state
	case *mcp.GetPromptParams:
		x.RequestState = state
	case *mcp.ReadResourceParams:
		x.RequestState = state
	}
}
