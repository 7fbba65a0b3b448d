package config

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/mcpfsm/mcpfsm/policy"
)

// TestOtherHostFormats loads Codex's, Gemini CLI's and Windsurf's files,
// each in its host's own keys, and checks that they describe the same
// servers: the same filters, timeouts and token, and the same server left
// out by each host's way of disabling one.
func TestOtherHostFormats(t *testing.T) {
	lookup := env("GITHUB_PERSONAL_ACCESS_TOKEN", "ghp_test")
	want := []Server{
		{Name: "filesystem", Type: TypeStdio, Command: "npx",
			Args:         []string{"-y", "@modelcontextprotocol/server-filesystem", "/Users/username/Desktop"},
			Env:          []string{"NODE_ENV=production"},
			ExcludeTools: []string{"write_file", "move_*"},
			Reconnect:    policy.Default(), ConnectTimeout: 10 * time.Second, CallTimeout: time.Minute},
		{Name: "github", Type: TypeHTTP, URL: "https://api.githubcopilot.com/mcp/",
			Headers:      http.Header{"Authorization": {"Bearer ghp_test"}},
			IncludeTools: []string{"get_*", "search_*"}, MaxConcurrentCalls: 4,
			Reconnect: policy.Default(), ConnectTimeout: 30 * time.Second, CallTimeout: 2 * time.Minute},
	}
	tests := []struct {
		file     string
		format   Format
		warnings []string
	}{
		{"testdata/codex.toml", MCPServersTOML, []string{
			"mcp_servers.github.supports_parallel_tool_calls is ignored: mcpfsm does not use it (a key of Codex)",
			"mcp_servers.memory is disabled (enabled = false): not started",
		}},
		{"testdata/gemini-settings.json", MCPServers, []string{
			"general, ui, security are ignored: they are Gemini CLI settings, not servers",
			"mcpServers.memory is excluded (mcp.excluded): not started",
		}},
		{"testdata/windsurf.json", MCPServers, []string{
			`mcpServers.memory is disabled ("disabled": true): not started`,
		}},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			cfg, err := Load(tt.file, &Options{LookupEnv: lookup})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, cfg.Servers); diff != "" {
				t.Errorf("servers (-want +got):\n%s", diff)
			}
			if cfg.Format != tt.format {
				t.Errorf("Format = %q, want %q", cfg.Format, tt.format)
			}
			if diff := cmp.Diff(tt.warnings, cfg.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGeminiAndWindsurfKeys covers the keys Gemini CLI and Windsurf read
// differently from Claude's files, and the mcpfsm extensions every JSON
// layout shares.
func TestGeminiAndWindsurfKeys(t *testing.T) {
	lookup := env("TOKEN", "t0k", "HOME", "/home/u")
	const gemini = `"ui": {}, ` // a Gemini setting: the file is Gemini CLI's
	tests := []struct {
		name     string
		in       string
		want     Server // compared when no errors are wanted
		errs     []string
		warnings []string
	}{
		{
			name:     "gemini url is SSE, and $VAR is a variable",
			in:       `{` + gemini + `"mcpServers": {"a": {"url": "https://h/sse", "headers": {"X": "$TOKEN-$1-$"}}}}`,
			want:     Server{Name: "a", Type: TypeSSE, URL: "https://h/sse", Headers: http.Header{"X": {"t0k-$1-$"}}},
			warnings: []string{"ui is ignored: it is a Gemini CLI setting, not a server"},
		},
		{
			name: "gemini url with type http",
			in:   `{"mcpServers": {"a": {"url": "https://h/mcp", "type": "http", "trust": true}}}`,
			want: Server{Name: "a", Type: TypeHTTP, URL: "https://h/mcp"},
		},
		{
			name:     "gemini httpUrl and timeout",
			in:       `{"mcpServers": {"a": {"httpUrl": "https://h/mcp", "timeout": 1500, "description": "d"}}}`,
			want:     Server{Name: "a", Type: TypeHTTP, URL: "https://h/mcp", CallTimeout: 1500 * time.Millisecond},
			warnings: []string{"mcpServers.a.description is ignored: mcpfsm does not use it (a key of several hosts)"},
		},
		{
			name:     "outside gemini url is http, $VAR is kept and timeout is Cline's",
			in:       `{"mcpServers": {"a": {"url": "https://h/mcp", "timeout": 60, "headers": {"X": "$TOKEN"}}}}`,
			want:     Server{Name: "a", Type: TypeHTTP, URL: "https://h/mcp", Headers: http.Header{"X": {"$TOKEN"}}},
			warnings: []string{"mcpServers.a.timeout is ignored: mcpfsm does not use it (a key of Cline, in seconds; mcpfsm's are connectTimeoutMs and callTimeoutMs)"},
		},
		{
			name: "gemini older flat lists",
			in: `{"allowMCPServers": ["a", "b"], "excludeMCPServers": ["b"], "theme": "x",
				"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}, "c": {"command": "z"}}}`,
			want: Server{Name: "a", Type: TypeStdio, Command: "x"},
			warnings: []string{
				"theme is ignored: it is a Gemini CLI setting, not a server",
				"mcpServers.b is excluded (mcp.excluded): not started",
				"mcpServers.c is not in mcp.allowed: not started",
			},
		},
		{
			name:     "gemini mcp settings beside the lists",
			in:       `{"mcp": {"allowed": ["a"], "serverCommand": "x"}, "mcpServers": {"a": {"command": "x"}}}`,
			want:     Server{Name: "a", Type: TypeStdio, Command: "x"},
			warnings: []string{"mcp.serverCommand is ignored: it is a Gemini CLI setting, not a server"},
		},
		{
			name: "windsurf serverUrl and disabledTools",
			in:   `{"mcpServers": {"a": {"serverUrl": "https://h/mcp", "disabledTools": ["x"], "excludeTools": ["y*"], "includeTools": ["*"]}}}`,
			want: Server{Name: "a", Type: TypeHTTP, URL: "https://h/mcp", ExcludeTools: []string{"x", "y*"}, IncludeTools: []string{"*"}},
		},
		{
			name: "extensions in a VS Code file, and null ignored keys",
			in:   `{"servers": {"a": {"command": "x", "includeTools": ["read_*"], "maxConcurrentCalls": 2, "alwaysAllow": null, "disabledTools": null}}}`,
			want: Server{Name: "a", Type: TypeStdio, Command: "x", IncludeTools: []string{"read_*"}, MaxConcurrentCalls: 2},
		},
		{
			name:     "an empty filter warns",
			in:       `{"mcpServers": {"a": {"command": "x", "includeTools": []}}}`,
			want:     Server{Name: "a", Type: TypeStdio, Command: "x"},
			warnings: []string{"mcpServers.a.includeTools is empty: it filters nothing; remove it, or list tool names"},
		},
		{
			name: "every error at once",
			in: `{"ui": {}, "mcp": {"allowed": "a", "excluded": [1]}, "mcpServers": {
				"a": {"url": "https://h", "httpUrl": "https://h"},
				"b": {"httpUrl": "https://h", "type": "sse"},
				"c": {"tcp": "h:1"},
				"d": {"command": "x", "timeout": 0, "callTimeoutMs": 5},
				"e": {"command": "x", "includeTools": ["", "a?", "b c", 1], "excludeTools": "x", "disabledTools": ["[x]"]},
				"f": {"command": "x", "maxConcurrentCalls": 0},
				"g": {"command": "x", "maxConcurrentCalls": "2"},
				"h": {"command": "x", "maxConcurrentCalls": 1.5},
				"i": {"serverUrl": "ftp://h"},
				"j": {"command": "$NOPE"}
			}}`,
			errs: []string{
				"mcp.allowed must be an array of server names, not a string",
				"mcp.excluded[0] must be a string, not a number",
				`mcpServers.a: give one of "url" and "httpUrl", not both`,
				`mcpServers.b: "httpUrl" is a Streamable HTTP endpoint: drop "type", or give the endpoint as "url"`,
				"mcpServers.c.tcp: Gemini CLI's websocket transport is not supported: mcpfsm speaks stdio (command), Streamable HTTP (httpUrl) and SSE (url)",
				`mcpServers.c: give exactly one of "command" (a stdio server) or "url" (an HTTP server)`,
				`mcpServers.d: give one of "timeout" and "callTimeoutMs", not both`,
				"mcpServers.d.timeout must be a positive integer number of milliseconds, at most 2147483647",
				"mcpServers.e.includeTools[0] must not be empty: give a tool name, with * matching any run of characters",
				`mcpServers.e.includeTools[1] "a?" is not a tool name pattern: only * is a wildcard (? [ ] { } \ are not); give the tool's name, as in "read_*"`,
				`mcpServers.e.includeTools[2] "b c" is not a tool name pattern: tool names hold no spaces or control characters`,
				"mcpServers.e.includeTools[3] must be a string, not a number",
				"mcpServers.e.excludeTools must be an array of tool names, not a string",
				`mcpServers.e.disabledTools[0] "[x]" is not a tool name pattern: only * is a wildcard (? [ ] { } \ are not); give the tool's name, as in "read_*"`,
				"mcpServers.f.maxConcurrentCalls must be a positive integer (the most calls in flight at once), at most 65536; omit it for no limit",
				"mcpServers.g.maxConcurrentCalls must be a positive integer (the most calls in flight at once), not a string",
				"mcpServers.h.maxConcurrentCalls must be a positive integer (the most calls in flight at once), at most 65536; omit it for no limit",
				`mcpServers.i.serverUrl must be an http:// or https:// URL such as https://host/mcp, not "ftp://h"`,
				"mcpServers.j.command: ${NOPE}: environment variable NOPE is not set: set it, or give a default as in ${NOPE:-value}",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.in), &Options{LookupEnv: lookup})
			var gotErrs []string
			if err != nil {
				gotErrs = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(tt.errs, gotErrs); diff != "" {
				t.Fatalf("errors (-want +got):\n%s", diff)
			}
			if tt.errs != nil {
				return
			}
			if diff := cmp.Diff(tt.want, cfg.Servers[0], cmpopts.IgnoreFields(Server{}, "Reconnect")); diff != "" {
				t.Errorf("server (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.warnings, cfg.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGeminiByFileName: a settings.json is Gemini CLI's even when nothing
// in it says so, and its url is then SSE; the same content under another
// name is Claude's, with url Streamable HTTP.
func TestGeminiByFileName(t *testing.T) {
	dir := t.TempDir()
	content := []byte(`{"mcpServers": {"a": {"url": "https://h/sse"}}}`)
	for name, want := range map[string]string{"settings.json": TypeSSE, "mcp.json": TypeHTTP} {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, content, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(file, &Options{LookupEnv: noEnv})
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Servers[0].Type; got != want {
			t.Errorf("%s: type %q, want %q", name, got, want)
		}
	}
}

func TestSniff(t *testing.T) {
	for in, want := range map[string]bool{
		"# Codex\n":                     true,
		"[mcp_servers.a]\ncommand='x'":  true,
		"  [[x]]":                       true,
		"model = \"o3\"":                true,
		"mcp_servers.a.command = \"x\"": true,
		"\ufeff[ mcp_servers.a ]":       true,
		"":                              false,
		"{}":                            false,
		"[1]":                           false,
		"[true]":                        false,
		"[\"a\"]":                       false,
		"// c\n{}":                      false,
		"null":                          false,
		"true":                          false,
		"xyz":                           false,
	} {
		if got := sniff([]byte(in)).toml; got != want {
			t.Errorf("sniff(%q).toml = %v, want %v", in, got, want)
		}
	}
}
