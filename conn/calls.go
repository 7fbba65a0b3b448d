package conn

import (
	"context"
	"time"

	"github.com/mcpfsm/mcpfsm/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// call is Tool.Call on this generation; since is when the call started,
// if it waited for a slot first (zero: now).
func (g *generation) call(ctx context.Context, since time.Time, public, raw string, args any) (*mcp.CallToolResult, error) {
	var res *mcp.CallToolResult
	err := g.request(ctx, public, since, func(ctx context.Context) (err error) {
		res, err = g.sess.CallTool(ctx, &mcp.CallToolParams{Meta: callMeta(ctx), Name: raw, Arguments: args})
		return err
	})
	// The caller may be a remote MCP client: the SDK's errors quote the
	// endpoint's URL.
	return res, redact.Error(err)
}
