package conn_test

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool or prompt the Filter refuses is never registered, listed or
// callable, and the status counts the hidden tools.
func TestFilterHidesToolsAndPrompts(t *testing.T) {
	srv := conntest.NewServer()
	for _, name := range []string{"read", "write", "delete"} {
		srv.AddEchoTool(name)
	}
	for _, name := range []string{"greet", "drop_tables"} {
		srv.MCP.AddPrompt(&mcp.Prompt{Name: name}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	}
	reg, cat := conn.NewRegistry(), conn.NewCatalog()
	rec := conntest.NewRecorder()
	sup, err := conn.Start(context.Background(), conn.Config{Name: "fs", Transport: srv.Transport(), Registry: reg, Catalog: cat,
		Clock: clock.NewMock(), Logger: rec.Logger(), OnTransition: rec.OnTransition,
		Filter: func(name string) bool { return name != "delete" && name != "drop_tables" }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	defer sup.Close(context.Background())
	rec.Expect(t, 10*time.Second, conn.Established)

	var tools []string
	for _, tl := range reg.Tools() {
		tools = append(tools, tl.Name)
	}
	if d := cmp.Diff([]string{"mcp__fs__read", "mcp__fs__write"}, tools); d != "" {
		t.Errorf("registered tools (-want +got):\n%s", d)
	}
	if _, ok := reg.Lookup("mcp__fs__delete"); ok {
		t.Error("the filtered tool can be looked up, so called")
	}
	var prompts []string
	for _, p := range cat.Prompts() {
		prompts = append(prompts, p.Raw.Name)
	}
	if d := cmp.Diff([]string{"greet"}, prompts); d != "" {
		t.Errorf("published prompts (-want +got):\n%s", d)
	}
	if st := sup.Status(); st.HiddenTools != 1 {
		t.Errorf("Status.HiddenTools = %d, want 1", st.HiddenTools)
	}
}
