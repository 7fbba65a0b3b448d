package config_test

import (
	"fmt"
	"log"

	"github.com/mcpfsm/mcpfsm/config"
)

// A Claude Desktop style file, with a comment and a variable, becomes one
// Server per entry; package host runs them (host.ConnConfig is each one's
// conn.Config).
func Example() {
	file := []byte(`{
	  // the servers a host already runs
	  "mcpServers": {
	    "fs":  {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${DIR:-/tmp}"]},
	    "api": {"type": "http", "url": "https://example.com/mcp", "alwaysAllow": ["search"]}
	  }
	}`)
	cfg, err := config.Parse(file, &config.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range cfg.Servers {
		if s.Type == config.TypeStdio {
			fmt.Println(s.Name, s.Type, s.Command, s.Args)
		} else {
			fmt.Println(s.Name, s.Type, s.URL)
		}
	}
	for _, w := range cfg.Warnings {
		fmt.Println("warning:", w)
	}
	// Output:
	// fs stdio npx [-y @modelcontextprotocol/server-filesystem /tmp]
	// api http https://example.com/mcp
	// warning: mcpServers.api.alwaysAllow is ignored: mcpfsm does not use it (a key of Cline)
}

// A Codex entry's tool lists become IncludeTools and ExcludeTools, which
// ToolAllowed applies to the server's own tool names.
func ExampleServer_ToolAllowed() {
	file := []byte(`
[mcp_servers.fs]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
enabled_tools = ["read_*", "list_directory"]
disabled_tools = ["read_media_file"]
`)
	cfg, err := config.Parse(file, nil)
	if err != nil {
		log.Fatal(err)
	}
	fs := cfg.Servers[0]
	for _, tool := range []string{"read_text_file", "read_media_file", "list_directory", "write_file"} {
		fmt.Println(tool, fs.ToolAllowed(tool))
	}
	// Output:
	// read_text_file true
	// read_media_file false
	// list_directory true
	// write_file false
}
