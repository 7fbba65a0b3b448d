package front

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// whoTools gives each backend a tool "who" answering its name, and a
// tool only it lists.
func whoTools(name string, srv *conntest.Server) {
	for _, tool := range []string{"who", "only_" + name} {
		srv.MCP.AddTool(&mcp.Tool{Name: tool, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: tool + " of " + name}}}, nil
			})
	}
}

func TestRawNamesKeepTheServersNames(t *testing.T) {
	var logs syncBuffer
	r := newRigWith(t, rigOptions{names: NamesRaw, setup: whoTools,
		logger: slog.New(slog.NewTextHandler(&logs, nil))})
	want := []string{"echo", "mcp__b__echo", "mcp__b__who", "only_a", "only_b", "who"}
	if diff := cmp.Diff(want, r.tools(t)); diff != "" {
		t.Fatalf("tools (-want +got):\n%s", diff)
	}
	for name, answer := range map[string]string{
		"who": "who of a", "mcp__b__who": "who of b", "only_a": "only_a of a", "only_b": "only_b of b",
	} {
		if text, isErr := r.call(t, name); isErr || text != answer {
			t.Errorf("call %s = %q, isError %v; want %q", name, text, isErr, answer)
		}
	}
	// A second sync warns no more.
	r.front.Update()
	out := logs.String()
	for _, tool := range []string{"who", "echo"} {
		if n := strings.Count(out, "name="+tool+" served_as=mcp__b__"+tool); n != 1 {
			t.Errorf("warnings for the shared name %q: %d, want 1; logs:\n%s", tool, n, out)
		}
	}
}

func TestPrefixedNamesByDefault(t *testing.T) {
	r := newRigWith(t, rigOptions{setup: whoTools})
	want := []string{"mcp__a__echo", "mcp__a__only_a", "mcp__a__who", "mcp__b__echo", "mcp__b__only_b", "mcp__b__who"}
	if diff := cmp.Diff(want, r.tools(t)); diff != "" {
		t.Fatalf("tools (-want +got):\n%s", diff)
	}
	if text, _ := r.call(t, "mcp__b__who"); text != "who of b" {
		t.Errorf("call mcp__b__who = %q", text)
	}
}

func TestRawPromptNames(t *testing.T) {
	cr := newCatalogRig(t, NamesRaw)
	_, _, prompts := cr.lists(t)
	if diff := cmp.Diff([]string{"greet", "mcp__b__greet"}, prompts); diff != "" {
		t.Fatalf("prompts (-want +got):\n%s", diff)
	}
	for name, want := range map[string]string{"greet": "hello from a", "mcp__b__greet": "hello from b"} {
		if got, err := cr.prompt(t, name); err != nil || got != want {
			t.Errorf("prompt %s = %q, %v; want %q", name, got, err, want)
		}
	}
}

func TestParseNames(t *testing.T) {
	for in, want := range map[string]Names{"": NamesPrefixed, "prefixed": NamesPrefixed, "raw": NamesRaw} {
		if got, err := ParseNames(in); err != nil || got != want {
			t.Errorf("ParseNames(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseNames("short"); err == nil || !strings.Contains(err.Error(), "want prefixed") {
		t.Errorf("ParseNames(short) = %v", err)
	}
}

// TestSignInEntryNames: the sign-in tool of a server is named as that
// server's tool "authenticate" would be, and never takes a name a tool
// is served by.
func TestSignInEntryNames(t *testing.T) {
	tool := func(name string) *mcp.Tool { return &mcp.Tool{Name: name} }
	for _, tc := range []struct {
		names  Names
		served []string
		want   map[string]string
	}{
		{NamesPrefixed, nil, map[string]string{"mcp__notes__authenticate": "notes"}},
		{NamesPrefixed, []string{"mcp__notes__authenticate"}, map[string]string{}},
		{NamesRaw, nil, map[string]string{"authenticate": "notes"}},
		{NamesRaw, []string{"authenticate"}, map[string]string{"mcp__notes__authenticate": "notes"}},
		{NamesRaw, []string{"authenticate", "mcp__notes__authenticate"}, map[string]string{}},
	} {
		c := &client{f: &Front{opts: Options{Names: tc.names}}}
		want, defs := map[string]*mcp.Tool{}, map[string]json.RawMessage{}
		for _, n := range tc.served {
			want[n], defs[n] = tool(n), json.RawMessage(`{}`)
		}
		got := c.signInEntries([]string{"notes"}, want, defs)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s with %v served: entries (-want +got):\n%s", tc.names, tc.served, diff)
		}
		for _, n := range tc.served {
			if want[n].Description != "" {
				t.Errorf("%s: the served tool %q was replaced", tc.names, n)
			}
		}
	}
}
