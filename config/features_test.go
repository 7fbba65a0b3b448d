package config

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestParseFeatures covers the hosts' keys, JSONC and substitution: each
// case checks one server's fields, or the errors and warnings.
func TestParseFeatures(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(dir, "a.env")
	if err := os.WriteFile(envFile, []byte("# c\nexport A=1\nB=\"two words\\n\"\nC='lit $x' \nD=plain # note\n\nE=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.env")
	if err := os.WriteFile(bad, []byte("=x\nOK=\"open\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lookup := env("HOME", "/home/u", "TOKEN", "t0k", "EMPTY", "")
	tests := []struct {
		name     string
		in       string
		want     Server // compared when no errors are wanted
		errs     []string
		warnings []string
	}{
		{
			name: "jsonc comments and trailing commas",
			in:   "\ufeff{ // servers\n \"mcpServers\": { /* one */ \"a\": {\"command\": \"x // not a comment\", \"args\": [\"/*\", \"1\",],},\n},}",
			want: Server{Name: "a", Type: TypeStdio, Command: "x // not a comment", Args: []string{"/*", "1"}},
		},
		{
			name: "substitution",
			in: `{"servers": {"a": {"command": "${HOME}/bin/x", "args": ["${env:TOKEN}", "${MISSING:-def}", "${EMPTY:-e}", "$HOME", "${pathSeparator}"],
				"env": {"T": "${TOKEN}", "N": 1, "Z": null}, "cwd": "${workspaceFolder}"}}}`,
			want: Server{Name: "a", Type: TypeStdio, Command: "/home/u/bin/x",
				Args: []string{"t0k", "def", "e", "$HOME", string(filepath.Separator)}, Env: []string{"T=t0k", "N=1"}, Cwd: "/ws"},
		},
		{
			name: "env file then env",
			in:   `{"servers": {"a": {"command": "x", "envFile": "a.env", "env": {"A": "over"}}}}`,
			want: Server{Name: "a", Type: TypeStdio, Command: "x", EnvFile: envFile,
				Env: []string{"A=1", "B=two words\n", "C=lit $x", "D=plain", "E=x", "A=over"}},
		},
		{
			name: "http with headers",
			in:   `{"servers": {"a": {"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer ${TOKEN}", "X-A": "1"}}}}`,
			want: Server{Name: "a", Type: TypeHTTP, URL: "https://h/mcp", Headers: http.Header{"Authorization": {"Bearer t0k"}, "X-A": {"1"}}},
		},
		{
			name: "sse and aliases",
			in:   `{"servers": {"a": {"type": "sse", "url": "http://h/sse"}}}`,
			want: Server{Name: "a", Type: TypeSSE, URL: "http://h/sse"},
		},
		{
			name: "streamable-http alias",
			in:   `{"servers": {"a": {"type": "streamable-http", "url": "http://h/mcp"}}}`,
			want: Server{Name: "a", Type: TypeHTTP, URL: "http://h/mcp"},
		},
		{
			name: "ignored keys and disabled servers warn",
			in: `{"mcpServers": {"a": {"command": "x", "alwaysAllow": ["t"], "disabled": false, "dev": {}},
				"b": {"command": "y", "disabled": true},
				"c": {"command": "x", "reconnect": {"enabled": false, "maxAttempts": 3, "jitter": null}}}}`,
			want: Server{Name: "a", Type: TypeStdio, Command: "x"},
			warnings: []string{
				"mcpServers.a.alwaysAllow is ignored: mcpfsm does not use it (a key of Cline)",
				"mcpServers.a.dev is ignored: mcpfsm does not use it (a key of VS Code)",
				`mcpServers.b is disabled ("disabled": true): not started`,
				`mcpServers.c.reconnect.maxAttempts has no effect: reconnect is disabled ("enabled": false); remove it, or enable reconnect`,
			},
		},
		{
			name:     "unset env: variable is empty with a warning",
			in:       `{"servers": {"a": {"command": "x", "args": ["${env:NOPE}"]}}}`,
			want:     Server{Name: "a", Type: TypeStdio, Command: "x", Args: []string{""}},
			warnings: []string{"servers.a.args[0]: ${env:NOPE} is empty: NOPE is not set"},
		},
		{
			name: "every error at once",
			in: `{"servers": {
				"a": {"command": "${NOPE}", "args": ["${input:key}", "${foo:bar}", "${open", "${env:a b}"]},
				"b": {"type": "stdio", "url": "https://h/mcp"},
				"c": {"type": "http", "command": "x"},
				"d": {"type": "websocket", "url": "https://h"},
				"e": {"type": "sse"},
				"f": {"url": "https://h", "headers": {"Bad Name": "x", "X": "a\nb", "Y": 1}},
				"g": {"command": "x", "headers": {}, "envFile": "missing.env"},
				"h": {"command": "x", "envFile": "bad.env"},
				"i": {"type": "stdio"},
				"j": {"command": "x", "disabled": "no"},
				"k": {"command": "x", "envFile": "/dev/null"}
			}}`,
			errs: []string{
				"servers.a.command: ${NOPE}: environment variable NOPE is not set: set it, or give a default as in ${NOPE:-value}",
				"servers.a.args[0]: ${input:key} is not supported: mcpfsm runs unattended and cannot prompt for it; use ${env:NAME} and set NAME in mcpfsm's environment",
				"servers.a.args[1]: ${foo:bar} is not a variable mcpfsm knows: use ${NAME}, ${NAME:-default}, ${env:NAME}, ${workspaceFolder} or ${userHome}",
				`servers.a.args[2]: "${open" is not closed with '}'`,
				`servers.a.args[3]: ${env:a b}: "a b" is not an environment variable name`,
				`servers.b: "type": "stdio" needs a "command", not a "url"`,
				`servers.c: "type": "http" needs a "url", not a "command"`,
				`servers.d.type must be "stdio", "http" or "sse", not "websocket"`,
				`servers.e: "type": "sse" needs a "url"`,
				`servers.f.headers."Bad Name" is not a valid HTTP header name`,
				"servers.f.headers.X must not contain a line break",
				"servers.f.headers.Y must be a string, not a number",
				"servers.g.envFile: cannot read the env file: open " + filepath.Join(dir, "missing.env") + ": no such file or directory",
				`servers.g.headers only applies to "url" servers`,
				`servers.h.envFile: ` + bad + `, line 1: want KEY=VALUE, not a line that starts with '='`,
				`servers.h.envFile: ` + bad + `, line 2: the value of OK has an unterminated or malformed quote`,
				`servers.i: "type": "stdio" needs a "command"`,
				"servers.j.disabled must be true or false, not a string",
				"servers.k.envFile: /dev/null is not a regular file",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.in), &Options{LookupEnv: lookup, Dir: dir, WorkspaceFolder: "/ws"})
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
			ignore := cmpopts.IgnoreFields(Server{}, "Reconnect")
			if diff := cmp.Diff(tt.want, cfg.Servers[0], ignore); diff != "" {
				t.Errorf("server (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.warnings, cfg.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJSONCErrorsKeepPositions(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"{\n  /* open", "config is not valid JSON: line 2, column 3: a /* comment is never closed with */"},
		{"{ // c\n  \"servers\": [1,,]}", "config is not valid JSON: line 2, column 17: invalid character ',' looking for beginning of value"},
		{"{\"servers\": {\"a\": {\"command\": \"x\"}}}, // done", "config has data after its top-level object (line 1, column 37)"},
	} {
		_, err := Parse([]byte(tt.in), nil)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q) = %v, want %q", tt.in, err, tt.want)
		}
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		srv  Server
		want []string
	}{
		{Server{Name: "ok", Type: TypeStdio, Command: "prog", Env: []string{"PATH=" + dir}}, nil},
		{Server{Name: "abs", Type: TypeStdio, Command: prog, Cwd: dir}, nil},
		{Server{Name: "rel", Type: TypeStdio, Command: "./prog", Cwd: dir}, nil},
		{Server{Name: "web", Type: TypeHTTP, URL: "https://h/mcp"}, nil},
		{Server{Name: "nope", Type: TypeStdio, Command: "no-such-program-7c1", Env: []string{"PATH=" + dir}},
			[]string{`server nope: command "no-such-program-7c1" is not on the PATH its env sets: install it, or give its full path`}},
		{Server{Name: "cwd", Type: TypeStdio, Command: prog, Cwd: filepath.Join(dir, "gone")},
			[]string{"server cwd: cwd " + filepath.Join(dir, "gone") + " does not exist: create it or fix the path"}},
		{Server{Name: "file", Type: TypeStdio, Command: prog, Cwd: prog},
			[]string{"server file: cwd " + prog + " is not a directory"}},
		{Server{Name: "plain", Type: TypeStdio, Command: plain},
			[]string{"server plain: command " + plain + " is not executable: chmod +x it"}},
		{Server{Name: "missing", Type: TypeStdio, Command: "./gone"},
			[]string{"server missing: command ./gone does not exist"}},
	}
	for _, tt := range tests {
		var got []string
		for _, err := range tt.srv.Check() {
			got = append(got, err.Error())
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: Check (-want +got):\n%s", tt.srv.Name, diff)
		}
	}
}

func TestSuggest(t *testing.T) {
	for _, tt := range []struct{ key, want string }{
		{"Command", "did you mean command?"},
		{"comand", "did you mean command?"},
		{"header", "did you mean headers?"},
		{"xy", "known keys: type, command, args, env, envFile, cwd, url, httpUrl, serverUrl, headers, disabled, sandboxEnabled, sandbox, reconnect, failOnStartupError, connectTimeoutMs, callTimeoutMs, closeTimeoutMs, keepAliveMs, includeTools, excludeTools, maxConcurrentCalls, isolation, maxInstances, roots, allowScopes, toolScopes, rateLimit, maxResultBytes"},
	} {
		if got := suggest(tt.key, hostKeys); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

// TestBadURLShowsNoSecret: a rejected URL is shown without its user
// info and query values (nor a fragment's, such as an implicit grant's
// token), and one that does not parse not at all.
func TestBadURLShowsNoSecret(t *testing.T) {
	for in, want := range map[string]string{
		"ftp://user:pw1@h/p?key=pw2#access_token=pw3": `servers.a.url must be an http:// or https:// URL such as https://host/mcp, not "ftp://***@h/p?key=REDACTED#access_token=REDACTED"`,
		"https://h:pw1x": "servers.a.url must be an http:// or https:// URL such as https://host/mcp: it does not parse as a URL",
	} {
		_, err := Parse([]byte(`{"servers": {"a": {"url": "`+in+`"}}}`), &Options{LookupEnv: noEnv})
		if err == nil || err.Error() != want {
			t.Errorf("Parse(url %q) = %v, want %q", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("Parse(url %q) shows a secret: %v", in, err)
		}
	}
}
