package main

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfsm/mcpfsm/front"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServePerCallerSignInSearched: with -tools search, a 2026-07-28
// client of a caller not signed in to notes is listed the search and call
// tools alone. A search for a sign-in to notes answers the sign-in entry
// mcp__notes__authenticate, as the caller's tools/list would have listed
// it without search, and calling that entry, through mcpfsm_call_tool or
// by its name as any tool found is called, answers with the caller's own
// authorization URL (TestServePerCallerSignInListed).
func TestServePerCallerSignInSearched(t *testing.T) {
	as, is, resource, _, stderr, endpoint := servePerCaller(t, "-tools", "search")
	bob := connectWith(t, &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: bearer{is.Token(t, resource, "bob", "mcp"), http.DefaultTransport}}}, nil,
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	t.Cleanup(func() { _ = bob.sess.Close() })
	const entry = "mcp__notes__authenticate"
	// The tools/list waits for bob's instance of notes to ask for his
	// sign-in (callerListWait), so the entry is searchable after it.
	if tools := bob.tools(t); !slices.Equal(slices.Sorted(slices.Values(tools)), []string{front.CallToolName, front.SearchToolName}) {
		t.Fatalf("bob's 2026-07-28 client lists %v in search mode; want %s and %s alone; stderr:\n%s", tools, front.CallToolName, front.SearchToolName, stderr)
	}
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	res, err := bob.sess.CallTool(ctx, &mcp.CallToolParams{Name: front.SearchToolName, Arguments: map[string]any{"query": "sign in to notes"}})
	if err != nil || res.IsError {
		t.Fatalf("search: %v (result %+v)", err, res)
	}
	var found struct {
		Tools []struct{ Name, Server string }
	}
	if b, err := json.Marshal(res.StructuredContent); err != nil || json.Unmarshal(b, &found) != nil {
		t.Fatalf("search answered %+v; want {\"tools\": [...]}", res.StructuredContent)
	}
	if !slices.ContainsFunc(found.Tools, func(h struct{ Name, Server string }) bool { return h.Name == entry && h.Server == "notes" }) {
		t.Fatalf("a search for a sign-in to notes found %+v; want %s of server notes", found.Tools, entry)
	}
	authURL := regexp.MustCompile(regexp.QuoteMeta(as.Issuer+"/authorize?") + `[^\s"'()]+`)
	for _, call := range []*mcp.CallToolParams{
		{Name: front.CallToolName, Arguments: map[string]any{"name": entry}},
		{Name: entry, Arguments: map[string]any{}},
	} {
		res, err := bob.sess.CallTool(ctx, call)
		if err != nil {
			t.Errorf("%s %v: protocol error %v; want the sign-in entry's answer", call.Name, call.Arguments, err)
			continue
		}
		var text []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text = append(text, tc.Text)
			}
		}
		if !res.IsError || authURL.FindString(strings.Join(text, "\n")) == "" {
			t.Errorf("%s %v = %q (isError %v); want bob's authorization URL", call.Name, call.Arguments, text, res.IsError)
		}
	}
	noSignInSecret(t, as, "serve's stderr", stderr.String())
}
