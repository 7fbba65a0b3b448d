package config

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/policy"
)

// TestCodexKeys covers each key of a Codex [mcp_servers.NAME] table: each
// case checks the first server, or the errors, and the warnings.
func TestCodexKeys(t *testing.T) {
	lookup := env("TOKEN", "t0k", "HOME", "/home/u", "EMPTY", "", "NL", "a\nb")
	def := policy.Default()
	fast := def
	fast.MaxAttempts = 3
	tests := []struct {
		name     string
		in       string
		want     Server // compared when no errors are wanted
		errs     []string
		warnings []string
	}{
		{
			name: "stdio",
			in: `[mcp_servers.fs]
command = "npx"
args = ["-y", "pkg", "${HOME}", "$HOME"] # Codex substitutes nothing
env = { Z = "1", A = "2" }
env_vars = ["HOME", "UNSET"]
cwd = "/tmp"
startup_timeout_sec = 2.5
tool_timeout_sec = 1
required = true
closeTimeoutMs = 3000
keepAliveMs = 0
reconnect = { maxAttempts = 3 }
`,
			want: Server{Name: "fs", Type: TypeStdio, Command: "npx", Args: []string{"-y", "pkg", "${HOME}", "$HOME"},
				Env: []string{"Z=1", "A=2", "HOME=/home/u"}, Cwd: "/tmp", Reconnect: fast,
				ConnectTimeout: 2500 * time.Millisecond, CallTimeout: time.Second, CloseTimeout: 3 * time.Second,
				FailOnStartupError: true},
			warnings: []string{"mcp_servers.fs.env_vars[1]: environment variable UNSET is not set: not passed to the server"},
		},
		{
			name: "Codex's timeouts by default",
			in:   "[mcp_servers.a]\ncommand = \"x\"\n",
			want: Server{Name: "a", Type: TypeStdio, Command: "x", Reconnect: def, ConnectTimeout: 10 * time.Second, CallTimeout: time.Minute},
		},
		{
			name: "http headers: static, then from the environment, then the bearer token",
			in: `[mcp_servers.web]
url = "https://h/mcp"
bearer_token_env_var = "TOKEN"
http_headers = { "X-A" = "1", Authorization = "Basic x" }
env_http_headers = { "X-B" = "TOKEN", "X-C" = "UNSET", "X-D" = "EMPTY" }
`,
			want: Server{Name: "web", Type: TypeHTTP, URL: "https://h/mcp", Reconnect: def,
				Headers:        http.Header{"Authorization": {"Bearer t0k"}, "X-A": {"1"}, "X-B": {"t0k"}},
				ConnectTimeout: 10 * time.Second, CallTimeout: time.Minute},
			warnings: []string{
				"mcp_servers.web.env_http_headers.X-C: environment variable UNSET is not set: the header is not sent",
				"mcp_servers.web.env_http_headers.X-D: environment variable EMPTY is not set: the header is not sent",
			},
		},
		{
			name: "legacy startup_timeout_ms",
			in:   "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_ms = 1500\n",
			want: Server{Name: "a", Type: TypeStdio, Command: "x", Reconnect: def, ConnectTimeout: 1500 * time.Millisecond, CallTimeout: time.Minute},
		},
		{
			name:     "startup_timeout_sec wins over startup_timeout_ms given first",
			in:       "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_ms = 1500\nstartup_timeout_sec = 3\n",
			want:     Server{Name: "a", Type: TypeStdio, Command: "x", Reconnect: def, ConnectTimeout: 3 * time.Second, CallTimeout: time.Minute},
			warnings: []string{"mcp_servers.a.startup_timeout_ms has no effect: startup_timeout_sec is given; remove one"},
		},
		{
			name: "filters, ignored keys and a disabled server",
			in: `[mcp_servers.a]
command = "x"
enabled_tools = ["read_*", "list"]
disabled_tools = ["read_secret"]
maxConcurrentCalls = 8
default_tools_approval_mode = "approve"

[mcp_servers.a.tools.list]
approval_mode = "approve"

[mcp_servers.b]
command = "y"
enabled = false
`,
			want: Server{Name: "a", Type: TypeStdio, Command: "x", Reconnect: def, ConnectTimeout: 10 * time.Second, CallTimeout: time.Minute,
				IncludeTools: []string{"read_*", "list"}, ExcludeTools: []string{"read_secret"}, MaxConcurrentCalls: 8},
			warnings: []string{
				"mcp_servers.a.default_tools_approval_mode is ignored: mcpfsm does not use it (a key of Codex)",
				"mcp_servers.a.tools is ignored: mcpfsm does not use it (a key of Codex)",
				"mcp_servers.b is disabled (enabled = false): not started",
			},
		},
		{
			name: "every error at once",
			in: `[mcp_servers.a]
url = "https://h/mcp"
bearer_token_env_var = "UNSET"
bearer_token = "s3cr3t-literal"
startup_timeout_sec = 0
tool_timeout_sec = "5"

[mcp_servers.b]
command = 1
comand = "x"
connectTimeoutMs = 5
enabled_tools = ["a?"]
http_headers = { X = "1" }
cwd = 1979-05-27
env_vars = ["A-B"]

[mcp_servers.c]
command = "x"
url = "https://h"

[mcp_servers."d e"]
command = "x"

[mcp_servers.f]
url = "https://h"
bearer_token_env_var = "EMPTY"

[mcp_servers.g]
url = "https://h"
bearer_token_env_var = "NL"
env_http_headers = { "Bad Name" = "TOKEN", Y = "NL" }
`,
			errs: []string{
				"mcp_servers.a.bearer_token is not supported (Codex rejects it too): put the token in an environment variable and name that variable in bearer_token_env_var",
				"mcp_servers.a.startup_timeout_sec must be a positive number of seconds, at most 2147483",
				"mcp_servers.a.tool_timeout_sec must be a number of seconds, not a string",
				"mcp_servers.a.bearer_token_env_var: environment variable UNSET is not set: set it to the server's bearer token",
				"mcp_servers.b.cwd must not be a date: quote it if it is a string",
				"mcp_servers.b.command must be a string, not a number",
				"mcp_servers.b.comand is not a server option (did you mean command?)",
				"mcp_servers.b.connectTimeoutMs is not a Codex server option: in a Codex file give startup_timeout_sec",
				`mcp_servers.b.enabled_tools[0] "a?" is not a tool name pattern: only * is a wildcard (? [ ] { } \ are not); give the tool's name, as in "read_*"`,
				`mcp_servers.b.env_vars[0]: "A-B" is not an environment variable name`,
				`mcp_servers.b.http_headers only applies to "url" servers`,
				`mcp_servers.c: give exactly one of "command" or "url", not both`,
				"mcp_servers.f.bearer_token_env_var: environment variable EMPTY is empty: set it to the server's bearer token",
				`mcp_servers.g.env_http_headers."Bad Name" is not a valid HTTP header name`,
				"mcp_servers.g.env_http_headers.Y: environment variable NL holds a line break, which no HTTP header may",
				"mcp_servers.g.bearer_token_env_var: environment variable NL holds a line break, which no HTTP header may",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.in), &Options{LookupEnv: lookup})
			var gotErrs []string
			if err != nil {
				gotErrs = strings.Split(err.Error(), "\n")
				for _, secret := range []string{"t0k", "s3cr3t", "a\nb"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("an error shows the secret %q:\n%v", secret, err)
					}
				}
			}
			if diff := cmp.Diff(tt.errs, gotErrs); diff != "" {
				t.Fatalf("errors (-want +got):\n%s", diff)
			}
			if tt.errs != nil {
				return
			}
			if cfg.Format != MCPServersTOML {
				t.Errorf("Format = %q, want %q", cfg.Format, MCPServersTOML)
			}
			if diff := cmp.Diff(tt.want, cfg.Servers[0]); diff != "" {
				t.Errorf("server (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.warnings, cfg.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCodexFile covers the file around the servers: the servers' order in
// every TOML spelling, Codex's other settings (ignored without a word),
// and the errors of a file with no server to start.
func TestCodexFile(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		servers  []string
		err      string
	}{
		{name: "tables in file order", in: "model = \"o3\"\n[profiles.x]\nmodel = \"y\"\n[mcp_servers.b]\ncommand = \"y\"\n[mcp_servers.a]\ncommand = \"x\"\n",
			servers: []string{"b", "a"}},
		{name: "inline tables", in: "mcp_servers = { zz = { command = \"y\" }, aa = { url = \"https://h\" } }\n", servers: []string{"zz", "aa"}},
		{name: "dotted keys", in: "mcp_servers.q.command = \"y\"\nmcp_servers.p.command = \"x\"\n", servers: []string{"q", "p"}},
		{name: "no servers", in: "model = \"o3\"\n[mcp_server.a]\ncommand = \"x\"\n",
			err: "config has no mcp_servers table (mcp_server: did you mean mcp_servers?): Codex lists each server as a [mcp_servers.NAME] table"},
		{name: "no servers, no hint", in: "model = \"o3\"\n", err: "config has no mcp_servers table: Codex lists each server as a [mcp_servers.NAME] table"},
		{name: "servers not a table", in: "mcp_servers = 1\n", err: "mcp_servers must be a table of [mcp_servers.NAME] tables, not a number"},
		{name: "server not a table", in: "mcp_servers.a = \"x\"\n", err: "mcp_servers.a must be a JSON object, not a string"},
		{name: "empty", in: "[mcp_servers]\n", err: "mcp_servers is empty: add a [mcp_servers.NAME] table"},
		{name: "all disabled", in: "[mcp_servers.a]\ncommand = \"x\"\nenabled = false\n", err: "mcp_servers: every server is disabled: enable at least one"},
		{name: "duplicate key", in: "[mcp_servers.a]\ncommand = \"x\"\ncommand = \"y\"\n",
			err: "config is not valid TOML: line 3, column 1 (after key mcp_servers.a.command): Key 'mcp_servers.a.command' has already been defined."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.in), &Options{LookupEnv: noEnv})
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("Parse = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range cfg.Servers {
				names = append(names, s.Name)
			}
			if diff := cmp.Diff(tt.servers, names); diff != "" {
				t.Errorf("servers (-want +got):\n%s", diff)
			}
			if len(cfg.Warnings) != 0 {
				t.Errorf("warnings %q, want none", cfg.Warnings)
			}
		})
	}
}

// TestTOMLErrorsHideValues: a syntax error names the line and the key,
// never the text the parser stopped at, which may be an unquoted secret.
func TestTOMLErrorsHideValues(t *testing.T) {
	for _, in := range []string{
		"[mcp_servers.a.env]\nTOKEN = ghp_secret123\n",
		"[mcp_servers.a.env]\nTOKEN = \"ghp_secret123\n",
		"[mcp_servers.a]\nstartup_timeout_sec = 9e999999\n",
	} {
		_, err := Parse([]byte(in), &Options{LookupEnv: noEnv})
		if err == nil {
			t.Fatalf("Parse(%q) = nil error", in)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "config is not valid TOML: line 2, column ") || !strings.Contains(msg, "(after key mcp_servers.a.") {
			t.Errorf("Parse(%q) = %q, want the line and the key", in, msg)
		}
		for _, secret := range []string{"ghp", "secret", "9e999999"} {
			if strings.Contains(msg, secret) {
				t.Errorf("Parse(%q) = %q: shows %q", in, msg, secret)
			}
		}
	}
}

// TestLoadTOMLByExtension: a .toml file is read as TOML even when its
// first line does not look like it.
func TestLoadTOMLByExtension(t *testing.T) {
	file := t.TempDir() + "/config.toml"
	if err := writeFile(file, "\n\n\"mcp_servers\".a.command = \"x\"\n"); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(file, &Options{LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Format != MCPServersTOML || len(cfg.Servers) != 1 || cfg.Servers[0].Command != "x" {
		t.Errorf("Load = %+v", cfg)
	}
}

func writeFile(name, content string) error { return os.WriteFile(name, []byte(content), 0o644) }
