package front

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// searchFor calls the search tool as p and returns the names found.
func (p *rulesClient) searchFor(t *testing.T, query string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	res, err := p.sess.CallTool(ctx, &mcp.CallToolParams{Name: SearchToolName, Arguments: map[string]any{"query": query, "limit": 10}})
	if err != nil {
		t.Fatalf("search %q: %v", query, err)
	}
	if res.IsError {
		t.Fatalf("search %q: %v", query, res.Content)
	}
	var out struct {
		Tools []searchHit `json:"tools"`
	}
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &out); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range out.Tools {
		if h.InputSchema == nil {
			t.Errorf("hit %q without its input schema", h.Name)
		}
		names = append(names, h.Name)
	}
	slices.Sort(names)
	return names
}

var searchRules = authz.ToolScope{Pattern: "ask", Scopes: []string{"a:ask"}}

// Two callers with different scopes search the same words: each finds
// only the tools it may use, and a client in search mode is listed the
// search and call tools (and the pinned ones) only.
func TestSearchFindsOnlyTheCallersTools(t *testing.T) {
	modes(t, func(t *testing.T, perClient bool) {
		r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, perClient: perClient, bearer: true,
			tools: ToolsOptions{Search: true, Pin: []string{"meta", "ask"}}})
		r.bs.setGuard("a", authz.Guard{Rules: mustRules(t, []string{"a:use"}, searchRules)})
		alice := r.connectCaller(t, conn.ClassicProtocolVersion, "alice", "a:use", "a:ask")
		bob := r.connectCaller(t, conn.ClassicProtocolVersion, "bob", "a:use")
		if diff := cmp.Diff([]string{"ask", CallToolName, SearchToolName, "meta"}, alice.tools(t)); diff != "" {
			t.Errorf("alice's list (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{CallToolName, SearchToolName, "meta"}, bob.tools(t)); diff != "" {
			t.Errorf("bob's list, without the pinned tool he may not see (-want +got):\n%s", diff)
		}
		const words = "ask defaults progress"
		if diff := cmp.Diff([]string{"ask", "defaults", "progress"}, alice.searchFor(t, words)); diff != "" {
			t.Errorf("alice's search (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"defaults", "progress"}, bob.searchFor(t, words)); diff != "" {
			t.Errorf("bob's search (-want +got):\n%s", diff)
		}
	})
}

// A tool the caller may not see cannot be called through the call tool:
// it is refused as a direct call is, naming the scope; a tool it may
// use is called, with its arguments.
func TestCallToolTakesTheDirectPath(t *testing.T) {
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, bearer: true, tools: ToolsOptions{Search: true}})
	r.bs.setGuard("a", authz.Guard{Rules: mustRules(t, []string{"a:use"}, searchRules),
		Limiter: authz.NewLimiter("a", authz.Rate{N: 2, Per: time.Hour}, clock.NewMock())})
	bob := r.connectCaller(t, conn.ClassicProtocolVersion, "bob", "a:use")
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	call := func(name string, args any) (*mcp.CallToolResult, error) {
		return bob.sess.CallTool(ctx, &mcp.CallToolParams{Name: CallToolName, Arguments: map[string]any{"name": name, "arguments": args}})
	}
	_, err := call("ask", map[string]any{})
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) || wire.Code != jsonrpc.CodeInvalidParams || !strings.Contains(wire.Message, `"a:ask"`) {
		t.Errorf("bob's call of ask through %s: %v; want the refusal naming a:ask", CallToolName, err)
	}
	res, err := call("meta", map[string]any{"x": 1})
	if err != nil || res.IsError {
		t.Fatalf("bob's call of meta: %+v, %v", res, err)
	}
	if _, err := call("nosuch", nil); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("a call of an unknown tool: %v", err)
	}
	// The rate limit counts calls through the call tool as direct ones:
	// the second allowed call is direct, the third is past the rate.
	res, err = bob.sess.CallTool(ctx, &mcp.CallToolParams{Name: "meta", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("bob's direct call of a tool he found: %+v, %v", res, err)
	}
	res, err = call("meta", map[string]any{})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "rate") {
		t.Errorf("the third call: %+v, %v; want the rate limit's tool error", res, err)
	}
}

// A tool a server adds after a list change is found without a restart.
func TestSearchFollowsListChanges(t *testing.T) {
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, bearer: true, tools: ToolsOptions{Search: true}})
	alice := r.connectCaller(t, conn.ClassicProtocolVersion, "alice")
	if got := alice.searchFor(t, "weather forecast city"); len(got) != 0 {
		t.Fatalf("found %v before the server has a weather tool", got)
	}
	changed := r.f.opts.Registry.Changed()
	r.srv.MCP.AddTool(&mcp.Tool{Name: "weather", Description: "The forecast for a city.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	deadline := time.After(limit)
	for _, ok := r.f.opts.Registry.Lookup("mcp__a__weather"); !ok; _, ok = r.f.opts.Registry.Lookup("mcp__a__weather") {
		select {
		case <-changed:
			changed = r.f.opts.Registry.Changed()
		case <-deadline:
			t.Fatal("the new tool was not listed")
		}
	}
	r.f.Update() // what Sync does at the change, done here before the search
	if diff := cmp.Diff([]string{"weather"}, alice.searchFor(t, "weather forecast city")); diff != "" {
		t.Errorf("after the change (-want +got):\n%s", diff)
	}
}

// A hit of a server in an outage says so, as a call would.
func TestSearchHitSaysTheServerIsDown(t *testing.T) {
	clk := clock.NewMock()
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, bearer: true, clock: clk, tools: ToolsOptions{Search: true}})
	r.bs.status = func(string) (conn.Status, bool) {
		return conn.Status{State: conn.LostReconnecting, Attempt: 2, MaxAttempts: 5, NextRetry: clk.Now().Add(3 * time.Second)}, true
	}
	alice := r.connectCaller(t, conn.ClassicProtocolVersion, "alice")
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	res, err := alice.sess.CallTool(ctx, &mcp.CallToolParams{Name: SearchToolName, Arguments: map[string]any{"query": "progress"}})
	if err != nil || res.IsError {
		t.Fatalf("search: %+v, %v", res, err)
	}
	var out struct {
		Tools []searchHit `json:"tools"`
	}
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Tools) != 1 || out.Tools[0].Name != "progress" ||
		!strings.Contains(out.Tools[0].Status, "reconnecting in 3s (attempt 2/5)") {
		t.Errorf("hits %+v; want progress, saying its server reconnects in 3s", out.Tools)
	}
}

// A change of the rules changes what a client's search finds, without a
// new session.
func TestSearchFollowsARulesChange(t *testing.T) {
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, bearer: true, tools: ToolsOptions{Search: true}})
	r.bs.setGuard("a", authz.Guard{Rules: mustRules(t, []string{"a:use"})})
	bob := r.connectCaller(t, conn.ClassicProtocolVersion, "bob", "a:use")
	if diff := cmp.Diff([]string{"ask", "progress"}, bob.searchFor(t, "ask progress")); diff != "" {
		t.Fatalf("before the change (-want +got):\n%s", diff)
	}
	r.bs.setGuard("a", authz.Guard{Rules: mustRules(t, []string{"a:use"}, searchRules)})
	r.f.Update() // what a reload does (host.Options.OnApply)
	if diff := cmp.Diff([]string{"progress"}, bob.searchFor(t, "ask progress")); diff != "" {
		t.Errorf("after ask needs a:ask (-want +got):\n%s", diff)
	}
}
