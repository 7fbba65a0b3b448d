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

	cmd, stderr, fc = start(nil)
	if text, isErr := fc.call(t, "mcp__fix__ask", ""); !isErr || !strings.Contains(text, "the client of mcpfsm that made the request does not support elicitation") {
		t.Errorf("ask with a client without elicitation = %q (isError %v)", text, isErr)
	}
	_ = fc.sess.Close()
	if code := wait(t, cmd, stderr); code != 0 {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}
