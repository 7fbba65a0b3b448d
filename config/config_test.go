package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/policy"
)

func TestParseConfig(t *testing.T) {
	def := policy.Default()
	fast := def
	fast.InitialDelay, fast.MaxDelay, fast.MaxAttempts = 50*time.Millisecond, 100*time.Millisecond, 3
	fast.ProbeInterval = time.Minute
	tests := []struct {
		name string
		in   string
		want *Config
		errs []string
	}{
		{
			name: "stdio and http",
			in: `{"servers": {
				"fs": {"command": "npx", "args": ["-y", "pkg"], "env": {"K": "V"}, "cwd": "/tmp",
					"reconnect": {"initialDelayMs": 50, "maxDelayMs": 100, "maxAttempts": 3, "probeIntervalMs": 60000},
					"failOnStartupError": true, "connectTimeoutMs": 1000, "callTimeoutMs": 2000,
					"closeTimeoutMs": 3000, "keepAliveMs": 0},
				"web": {"url": "https://host/mcp", "reconnect": null, "args": null}
			}}` + "\n",
			want: &Config{Format: Servers, Servers: []Server{
				{Name: "fs", Command: "npx", Args: []string{"-y", "pkg"}, Env: []string{"K=V"}, Cwd: "/tmp",
					Reconnect: fast, Type: TypeStdio, FailOnStartupError: true, ConnectTimeout: time.Second,
					CallTimeout: 2 * time.Second, CloseTimeout: 3 * time.Second},
				{Name: "web", Type: TypeHTTP, URL: "https://host/mcp", Reconnect: def},
			}},
		},
		{
			name: "minimal",
			in:   `{"servers":{"a-B_9":{"command":"x"}}}`,
			want: &Config{Format: Servers, Servers: []Server{{Name: "a-B_9", Command: "x", Type: TypeStdio, Reconnect: def}}},
		},
		{name: "empty", in: "", errs: []string{"config is empty: it must be a JSON object"}},
		{name: "not an object", in: `[1]`, errs: []string{"config must be a JSON object, not an array"}},
		{name: "malformed", in: "{\n  \"servers\": {,}}", errs: []string{
			`config is not valid JSON: line 2, column 15: invalid character ',' looking for beginning of object key string`}},
		{name: "truncated", in: `{"servers": {`, errs: []string{"config is not valid JSON: line 1, column 14: unexpected end of input: close every object, array and string"}},
		{name: "trailing garbage", in: "{\"servers\": {\"a\": {\"command\": \"x\"}}}\nxyz", errs: []string{
			"config has data after its top-level object (line 2, column 1)"}},
		{name: "second object", in: `{"servers": {"a": {"command": "x"}}} {}`, errs: []string{
			"config has data after its top-level object (line 1, column 38)"}},
		{name: "no servers", in: `{}`, errs: []string{`config must have a "mcpServers" (Claude Desktop, Claude Code, Cursor, Gemini CLI, Windsurf) or "servers" (VS Code) object naming at least one server`}},
		{name: "empty servers", in: `{"servers": {}}`, errs: []string{"servers is empty: name at least one server"}},
		{name: "null servers", in: `{"servers": null}`, errs: []string{"servers must be an object naming at least one server, not null"}},
		{name: "both layouts", in: `{"mcpServers": {"a": {"command": "x"}}, "servers": {"a": {"command": "x"}}}`, errs: []string{
			`config has both "mcpServers" and "servers": list every server under one of them`}},
		{name: "unknown top key", in: `{"servers": {"a": {"command": "x"}}, "x y": 1, "mcpServer": {}}`, errs: []string{
			`"x y" is not a config key (known keys: mcpServers, servers, inputs, sandbox, toolList)`,
			`mcpServer is not a config key (did you mean mcpServers?)`}},
		{name: "servers not object", in: `{"servers": ["a"]}`, errs: []string{"servers must be a JSON object, not an array"}},
		{
			name: "every server error at once",
			in: `{"servers": {
				"fs": {"command": "npx", "args": ["-y", 1, null], "env": {"K": true, "A=B": "x"}, "cwd": ""},
				"both": {"command": "x", "url": "https://h/mcp"},
				"neither": {"args": []},
				"web": {"url": "ftp://h", "cwd": "/", "env": {}},
				"bad__name": {"command": "x"},
				"my server": {"command": "x"},
				"types": {"command": 1, "failOnStartupError": "yes", "connectTimeoutMs": 1.5,
					"keepAliveMs": -1, "closeTimeoutMs": "5", "callTimeoutMs": 0, "Command": "x", "foo": 1, "keepAlive": 1},
				"pol": {"command": "x", "reconnect": {"initialDelayMs": "x", "maxAttempts": 0}},
				"dup": {"command": "x", "command": "y"},
				"dup": {"command": "z"},
				"notobj": "x"
			}}`,
			errs: []string{
				"servers.dup is given more than once",
				"servers.fs.args[1] must be a string, not a number",
				"servers.fs.args[2] must be a string, not null",
				"servers.fs.env.K must be a string, not a boolean",
				`servers.fs.env."A=B" is not a valid environment variable name: it must be non-empty, without '=' or NUL`,
				"servers.fs.cwd must not be empty: give a directory (omit it to use mcpfsm's working directory)",
				`servers.both: give exactly one of "command" or "url", not both`,
				`servers.neither: give exactly one of "command" (a stdio server) or "url" (an HTTP server)`,
				`servers.web.url must be an http:// or https:// URL such as https://host/mcp, not "ftp://h"`,
				`servers.web.env only applies to "command" servers`,
				`servers.web.cwd only applies to "command" servers`,
				"servers.types.command must be a string, not a number",
				"servers.types.failOnStartupError must be true or false, not a string",
				"servers.types.connectTimeoutMs must be a positive integer number of milliseconds, at most 2147483647",
				"servers.types.keepAliveMs must be a non-negative integer number of milliseconds, at most 2147483647",
				"servers.types.closeTimeoutMs must be a number of milliseconds, not a string",
				"servers.types.callTimeoutMs must be a positive integer number of milliseconds, at most 2147483647",
				"servers.types.Command is not a server option (did you mean command?)",
				"servers.types.foo is not a server option (known keys: type, command, args, env, envFile, cwd, url, httpUrl, serverUrl, headers, disabled, sandboxEnabled, sandbox, reconnect, failOnStartupError, connectTimeoutMs, callTimeoutMs, closeTimeoutMs, keepAliveMs, includeTools, excludeTools, maxConcurrentCalls, isolation, maxInstances, roots, allowScopes, toolScopes, rateLimit, maxResultBytes)",
				"servers.types.keepAlive is not a server option (did you mean keepAliveMs?)",
				"servers.pol.reconnect.initialDelayMs must be a number of milliseconds, not a string",
				"servers.pol.reconnect.maxAttempts must be a positive integer",
				"servers.dup.command is given more than once",
				"servers.notobj must be a JSON object, not a string",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.in), &Options{LookupEnv: noEnv})
			var gotErrs []string
			if err != nil {
				gotErrs = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(tt.errs, gotErrs); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

// noEnv is an empty environment.
func noEnv(string) (string, bool) { return "", false }

// env returns a LookupEnv over kv.
func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}
