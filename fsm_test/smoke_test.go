package fsm_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestRecoverySwapsGenerationsAndServesCalls(t *testing.T) {
	h := newHarness(t, []behaviour{accept}, []string{"echo", "add"})
	h.expect(conn.Established)
	before := h.reg.Tools()
	if diff := cmp.Diff([]string{"mcp__fx__add", "mcp__fx__echo"}, h.toolNames()); diff != "" {
		t.Fatalf("tools (-want +got):\n%s", diff)
	}
	if _, err := h.reg.Call(context.Background(), "mcp__fx__echo", map[string]any{}); err != nil {
		t.Fatalf("call before crash: %v", err)
	}
	h.crash()
	h.expect(conn.LostReconnecting)
	h.advance(500 * 1e6)
	h.expect(conn.Connecting, conn.Established)
	res, err := h.reg.Call(context.Background(), "mcp__fx__echo", map[string]any{})
	if err != nil {
		t.Fatalf("call after recovery: %v", err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "echo ok" {
		t.Fatalf("got %q", got)
	}
	_ = before
}
