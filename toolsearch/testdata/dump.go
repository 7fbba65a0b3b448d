//go:build ignore

// dump writes the tools/list of real npm MCP servers to servers.json, the
// fixture of the retrieval test. Run it from the repository's root with the
// servers installed under DIR/node_modules (npm install --prefix DIR
// @modelcontextprotocol/server-...):
//
//	go run ./toolsearch/testdata/dump.go DIR
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// server is one dumped server's listing.
type server struct {
	Name    string      `json:"name"`
	Package string      `json:"package"`
	Tools   []*mcp.Tool `json:"tools"`
}

func main() {
	dir := os.Args[1]
	mods := filepath.Join(dir, "node_modules", "@modelcontextprotocol")
	specs := []struct {
		name, pkg, entry string
		args             []string
	}{
		{"filesystem", "server-filesystem", "dist/index.js", []string{os.TempDir()}},
		{"everything", "server-everything", "dist/index.js", []string{"stdio"}},
		{"memory", "server-memory", "dist/index.js", nil},
		{"thinking", "server-sequential-thinking", "dist/index.js", nil},
		{"github", "server-github", "dist/index.js", nil},
	}
	var out []server
	for _, s := range specs {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.Command("node", append([]string{filepath.Join(mods, s.pkg, s.entry)}, s.args...)...)
		cmd.Env = append(os.Environ(), "MEMORY_FILE_PATH="+filepath.Join(os.TempDir(), "dump-memory.jsonl"))
		c := mcp.NewClient(&mcp.Implementation{Name: "dump", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
		if err != nil {
			fmt.Fprintln(os.Stderr, s.name, err)
			os.Exit(1)
		}
		var tools []*mcp.Tool
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				fmt.Fprintln(os.Stderr, s.name, err)
				os.Exit(1)
			}
			tools = append(tools, t)
		}
		_ = cs.Close()
		cancel()
		out = append(out, server{Name: s.name, Package: "@modelcontextprotocol/" + s.pkg, Tools: tools})
		fmt.Fprintln(os.Stderr, s.name, len(tools), "tools")
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	if err := os.WriteFile("toolsearch/testdata/servers.json", append(b, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
