package conn

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// WithInput returns ctx carrying a client's answers to a server's input
// requests and the requestState of the round they answer (multi
// round-trip requests, SEP-2322). A tools/call, prompts/get or
// resources/read made under it through the supervisor ([Tool.Call],
// [Supervisor.GetPrompt], [Supervisor.ReadResource]) sends them with
// the request: a proxy whose own client got a 2026-07-28 server's
// input_required result (with Config.Client.MultiRoundTrip disabled)
// passes the client's next round trip on this way. Empty responses and
// state send nothing.
func WithInput(ctx context.Context, responses mcp.InputResponseMap, state string) context.Context {
	if len(responses) == 0 && state == "" {
		return ctx
	}
	return context.WithValue(ctx, inputKey{}, input{responses, state})
}

type inputKey struct{}

type input struct {
	responses mcp.InputResponseMap
	state     string
}

// sendInput is the sending middleware of every generation's client: it
// puts the input WithInput put in ctx into the request's params. The
// params are the supervisor's own, made for this request.
func sendInput(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		in, ok := ctx.Value(inputKey{}).(input)
		if !ok {
			return next(ctx, method, req)
		}
		switch p := req.GetParams().(type) {
		case *mcp.CallToolParams:
			p.InputResponses, p.RequestState = in.responses, in.state
		case *mcp.GetPromptParams:
			p.InputResponses, p.RequestState = in.responses, in.state
		case *mcp.ReadResourceParams:
			p.InputResponses, p.RequestState = in.responses, in.state
		}
		return next(ctx, method, req)
	}
}
