package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeForwardsElicitation: a supervised server's elicitation reaches
// the client of mcpfsm serve when it supports elicitation, and fails
// clearly when it does not.
func TestServeForwardsElicitation(t *testing.T) {
	path := writeConfig(t, obj{"mcpServers": obj{"fix": obj{"command": fixture.Build(t), "args": []string{"-session"}}}})
	// Protocol 2025-11-25, as hosts speak it: on 2026-07-28 a server
	// cannot send a request while it serves one (SEP-2322).
	sessOpts := &mcp.ClientSessionOptions{ProtocolVersion: conn.ClassicProtocolVersion}
	start := func(opts *mcp.ClientOptions) (*exec.Cmd, *watcher, *frontClient) {
		return serveStdioProcessWith(t, nil, opts, sessOpts, "serve", "-config", path)
	}

	var asked string
	cmd, stderr, fc := start(&mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = req.Params.Message
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	})
	if text, isErr := fc.call(t, "mcp__fix__ask", ""); isErr || text != "accept Ada" || asked != "name?" {
		t.Errorf("ask with an eliciting client = %q (isError %v), the client was asked %q", text, isErr, asked)
	}
	_ = fc.sess.Close()
	if code := wait(t, cmd, stderr); code != 0 {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}

	// Without elicitation the call fails with the front's reason, as a
	// tool error or (when the server's SDK turns its input request into
	// elicitation/create itself, as go-sdk's does on the classic era) as
	// the server's protocol error.
	cmd, stderr, fc = start(nil)
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	res, err := fc.sess.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fix__ask", Arguments: map[string]any{}})
	var text string
	switch {
	case err != nil:
		text = err.Error()
	case res.IsError && len(res.Content) > 0:
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	if !strings.Contains(text, "the client of mcpfsm that made the request does not support elicitation") {
		t.Errorf("ask with a client without elicitation = %+v, %v; want a failure naming the missing capability", res, err)
	}
	_ = fc.sess.Close()
	if code := wait(t, cmd, stderr); code != 0 {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}
