package config

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/policy"
)

// TestHostFormats loads one file per host, each in the style of that
// host's documentation, and checks that they describe the same servers.
func TestHostFormats(t *testing.T) {
	lookup := env("GITHUB_PERSONAL_ACCESS_TOKEN", "ghp_test")
	def := policy.Default()
	filesystem := Server{Name: "filesystem", Type: TypeStdio, Command: "npx",
		Args:      []string{"-y", "@modelcontextprotocol/server-filesystem", "/Users/username/Desktop", "/Users/username/Downloads"},
		Reconnect: def}
	memory := Server{Name: "memory", Type: TypeStdio, Command: "npx",
		Args: []string{"-y", "@modelcontextprotocol/server-memory"},
		Env:  []string{"MEMORY_FILE_PATH=/Users/username/memory.jsonl"}, Reconnect: def}
	github := Server{Name: "github", Type: TypeHTTP, URL: "https://api.githubcopilot.com/mcp/",
		Headers: http.Header{"Authorization": {"Bearer ghp_test"}}, Reconnect: def}
	vsMemory := memory
	vsMemory.EnvFile = mustAbs(t, "testdata/vscode/memory.env")

	tests := []struct {
		file     string
		format   Format
		servers  []Server
		warnings []string
	}{
		{"testdata/claude_desktop_config.json", MCPServers, []Server{filesystem, memory},
			[]string{"globalShortcut is ignored: it is a Claude Desktop setting, not a server"}},
		{"testdata/claude-code.mcp.json", MCPServers, []Server{filesystem, memory, github}, nil},
		{"testdata/cursor.mcp.json", MCPServers, []Server{filesystem, memory, github}, nil},
		{"testdata/vscode/.vscode/mcp.json", Servers, []Server{filesystem, vsMemory, github},
			[]string{"inputs is ignored: mcpfsm does not prompt for input variables, so a ${input:...} reference is an error; use ${env:NAME} instead"}},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			cfg, err := Load(tt.file, &Options{LookupEnv: lookup})
			if err != nil {
				t.Fatal(err)
			}
			want := &Config{Format: tt.format, Servers: tt.servers, Warnings: tt.warnings}
			if diff := cmp.Diff(want, cfg); diff != "" {
				t.Errorf("Load (-want +got):\n%s", diff)
			}
		})
	}
}

func mustAbs(t *testing.T, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// TestExampleConfig keeps the example the command's documentation names
// loadable.
func TestExampleConfig(t *testing.T) {
	cfg, err := Load("testdata/mcpfsm.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 1 || cfg.Servers[0].Name != "everything" || len(cfg.Warnings) != 0 {
		t.Errorf("Load(mcpfsm.json) = %+v", cfg)
	}
}
