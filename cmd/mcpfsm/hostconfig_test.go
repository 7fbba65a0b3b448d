package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeVSCodeConfig runs a VS Code mcp.json as VS Code users write it
// (comments, trailing commas, inputs, type, headers, ${env:...}) under
// mcpfsm serve, with a stdio server and an HTTP server that wants a
// bearer token.
func TestServeVSCodeConfig(t *testing.T) {
	remote := mcp.NewServer(&mcp.Implementation{Name: "remote"}, nil)
	mcp.AddTool(remote, &mcp.Tool{Name: "whoami", Description: "says who called"},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct {
			Text string `json:"text,omitempty"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + req.Extra.Header.Get("Authorization")}}}, nil, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return remote }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	defer ts.Close()

	dir := filepath.Join(t.TempDir(), ".vscode")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "mcp.json")
	file := fmt.Sprintf(`{
  // Inputs are prompted on first server start, then stored securely by VS Code.
  "inputs": [
    {"type": "promptString", "id": "token", "description": "API token", "password": true},
  ],
  "servers": {
    /* a local server */
    "fix": {
      "type": "stdio",
      "command": %q,
      "args": ["-pidlog", "${workspaceFolder}/fix.pids"],
    },
    "remote": {
      "type": "http",
      "url": %q,
      "headers": {"Authorization": "Bearer ${env:MCPFSM_TEST_API_TOKEN}"},
    },
  },
}
`, fixture.Build(t), ts.URL)
	if err := os.WriteFile(cfg, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}

	cmd, stderr, fc := serveStdioProcess(t, []string{"MCPFSM_TEST_API_TOKEN=s3cret"}, "serve", "-config", cfg, "-log-level", "debug")
	want := []string{"mcp__fix__crash", "mcp__fix__echo", "mcp__remote__whoami"}
	if diff := cmp.Diff(want, fc.tools(t)); diff != "" {
		t.Errorf("tools (-want +got):\n%s\nstderr:\n%s", diff, stderr)
	}
	if text, isErr := fc.call(t, "mcp__remote__whoami", ""); isErr || text != "hello Bearer s3cret" {
		t.Errorf("remote call = %q, isError %v", text, isErr)
	}
	if text, isErr := fc.call(t, "mcp__fix__echo", "local"); isErr || text != "local" {
		t.Errorf("stdio call = %q, isError %v", text, isErr)
	}
	_ = fc.sess.Close()
	if code := wait(t, cmd, stderr); code != 0 {
		t.Errorf("mcpfsm serve: exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr.String(), "warning: inputs is ignored") {
		t.Errorf("no warning about inputs:\n%s", stderr)
	}
	allGone(t, filepath.Join(filepath.Dir(dir), "fix.pids"))
	if t.Failed() {
		t.Logf("stderr:\n%s", stderr)
	}
}
