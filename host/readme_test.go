package host_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/host"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The README's Go snippets, verbatim (TestREADMESnippets holds them to
// it): compiled with the package's tests, they cannot drift from the API.
// They start real servers (npx), so the test only compiles them.

// import "github.com/modelcontextprotocol/go-sdk/mcp" for the result's content.
func callEcho(ctx context.Context) error {
	reg := conn.NewRegistry() // or a zero conn.ToolRegistry
	// ctx bounds startup only; the supervisor runs until Close.
	sup, err := conn.Start(ctx, conn.Config{
		Name:      "everything",
		Transport: conn.Command("npx", "-y", "@modelcontextprotocol/server-everything"),
		Registry:  reg,
		// Reconnect: nil means policy.Default(): 10 attempts, 500ms doubling to 30s.
		// Logger: nil means slog.Default(), as for host.Options.Logger.
	})
	if err != nil {
		return err // invalid Config: a *conn.ConfigError naming the field
	}
	defer sup.Close(context.Background())

	if err := sup.Ready(ctx); err != nil {
		log.Printf("first attempt failed (retrying in the background): %v", err)
	}
	res, err := reg.Call(ctx, "mcp__everything__echo", map[string]any{"message": "hi"})
	if err != nil {
		return err // during an outage calls fail fast with an error matching conn.ErrUnavailable
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	return nil
}

func serveConfig(ctx context.Context) error {
	cfg, err := config.Load("servers.json", nil) // Claude, Cursor, VS Code, Codex, Gemini, Windsurf
	if cfg == nil {
		return err // with a Config, err names the entries left out (cfg.Skipped)
	}
	reg := conn.NewRegistry()
	h := host.New(host.Options{Path: "servers.json", Registry: reg})
	_ = h.Start(ctx, cfg) // waits (bounded) for the first attempts
	defer h.Close(context.Background())
	w, err := h.Watch(host.WatchOptions{}) // reload when the file changes
	if err != nil {
		return err
	}
	go w.Run(ctx)
	// reg holds every server's tools (reg.Call calls one); h.Status() reports each server.
	<-ctx.Done()
	return nil
}

// TestREADMESnippets checks that every Go snippet of the README is in
// this file, as written, so that it compiles with these tests.
func TestREADMESnippets(t *testing.T) {
	_ = []any{callEcho, serveConfig} // compiled, not run: they start npx
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile("readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) < 2 {
		t.Fatalf("the README has %d Go snippets, want at least 2", len(blocks))
	}
	for _, b := range blocks {
		if !strings.Contains(string(self), b[1]) {
			t.Errorf("this README snippet is not in host/readme_test.go, so it is not compiled; copy it here as written:\n%s", b[1])
		}
	}
}
