package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpfsm/mcpfsm/internal/fixture"
)

// inspect runs the Inspector CLI with args and decodes its JSON output.
func inspect(t *testing.T, launcher, path string, args ...string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{launcher, "--cli"}, args...)...)
	home := t.TempDir() // the Inspector keeps a catalog under $HOME
	cmd.Env = append(os.Environ(), "PATH="+path, "HOME="+home)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 5 && strings.Contains(stderr.String(), "tool_is_error") {
		err = nil // the tool's result has isError: the caller checks it
	}
	if err != nil {
		t.Fatalf("inspector %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out, stderr.String())
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("inspector %v: output is not JSON: %v\n%s", args, err, out)
	}
	return v
}

func toolNames(v map[string]any) []string {
	var names []string
	tools, _ := v["tools"].([]any)
	for _, tl := range tools {
		if m, ok := tl.(map[string]any); ok {
			names = append(names, m["name"].(string))
		}
	}
	return names
}

func resultText(v map[string]any) (string, bool) {
	var parts []string
	content, _ := v["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok && m["type"] == "text" {
			parts = append(parts, m["text"].(string))
		}
	}
	isErr, _ := v["isError"].(bool)
	return strings.Join(parts, "\n"), isErr
}

// TestInspector drives mcpfsm serve with the MCP Inspector CLI: over
// stdio (the Inspector starts serve), and over HTTP across a SIGKILL of
// the backend.
func TestInspector(t *testing.T) {
	launcher, path := fixture.Inspector(t)
	cfg := serveConfig(t).config

	v := inspect(t, launcher, path, "-e", "MCPFSM_TEST_MAIN=1", os.Args[0], "serve", "-config", cfg, "--method", "tools/list")
	if got := strings.Join(toolNames(v), " "); got != strings.Join(allTools, " ") {
		t.Errorf("stdio tools/list = %s, want %v", got, allTools)
	}
	v = inspect(t, launcher, path, "-e", "MCPFSM_TEST_MAIN=1", os.Args[0], "serve", "-config", cfg,
		"--method", "tools/call", "--tool-name", "mcp__fix__echo", "--tool-arg", "text=over stdio")
	if text, isErr := resultText(v); isErr || text != "over stdio" {
		t.Errorf("stdio tools/call = %q, isError %v", text, isErr)
	}

	// A fresh config: "once" comes up only once.
	b := serveConfig(t)
	cmd, stderr, url := serveHTTPProcess(t, b.config)
	call := func(text string) (string, bool) {
		return resultText(inspect(t, launcher, path, url, "--transport", "http",
			"--method", "tools/call", "--tool-name", "mcp__fix__echo", "--tool-arg", "text="+text))
	}
	if got := strings.Join(toolNames(inspect(t, launcher, path, url, "--transport", "http", "--method", "tools/list")), " "); got != strings.Join(allTools, " ") {
		t.Errorf("http tools/list = %s, want %v", got, allTools)
	}
	if text, isErr := call("before"); isErr || text != "before" {
		t.Errorf("http call before the kill = %q, isError %v", text, isErr)
	}
	at := len(stderr.String())
	unblock := b.killFix(t)
	stderr.waitFor(t, at, "connection lost; reconnecting", "server=fix")
	if text, isErr := call("during"); !isErr || !outageText.MatchString(text) {
		t.Errorf("http call during the outage = %q, isError %v; want an error result naming the server, its state and the next attempt", text, isErr)
	}
	unblock()
	stderr.waitFor(t, at, "reconnected and re-synced tools", "server=fix")
	if text, isErr := call("after"); isErr || text != "after" {
		t.Errorf("http call after recovery = %q, isError %v", text, isErr)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(t, cmd, stderr); code != 0 {
		t.Errorf("mcpfsm serve: exit %d, stderr:\n%s", code, stderr)
	}
	allGone(t, b.fixLog, b.onceLog)
}
