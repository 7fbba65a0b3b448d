package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Any key a host accepts names a server: invalid names are sanitized,
// stably, and a collision gets a suffix; valid names stay as they are.
func TestServerNamesHostsAccept(t *testing.T) {
	cfg, err := Parse([]byte(`{"mcpServers": {
		"Brave Search": {"command": "brave"},
		"github.com": {"url": "https://api.githubcopilot.com/mcp/"},
		"fs_": {"command": "fs"},
		"brave_search": {"command": "other"},
		"fs": {"command": "fs2"}
	}}`), &Options{LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	type nk struct{ Name, Key string }
	var got []nk
	for _, s := range cfg.Servers {
		got = append(got, nk{s.Name, s.Key})
	}
	want := []nk{{"brave_search_2", "Brave Search"}, {"github_com", "github.com"}, {"fs_2", "fs_"}, {"brave_search", ""}, {"fs", ""}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if s, ok := cfg.Lookup("Brave Search"); !ok || s.Name != "brave_search_2" {
		t.Errorf(`Lookup("Brave Search") = %q, %v`, s.Name, ok)
	}
}

// An invalid entry is left out with its errors; the others load.
func TestPartialConfig(t *testing.T) {
	cfg, err := Parse([]byte(`{"mcpServers": {
		"good": {"command": "x"},
		"bad": {"command": "x", "maxAttempts": 3, "connectTimeoutMs": "ten"},
		"worse": "npx",
		"also good": {"url": "https://h/mcp"}
	}}`), &Options{LookupEnv: noEnv})
	if err == nil || cfg == nil {
		t.Fatalf("Parse = %v, %v; want the valid servers and the errors", cfg, err)
	}
	var names []string
	for _, s := range cfg.Servers {
		names = append(names, s.Name)
	}
	if diff := cmp.Diff([]string{"good", "also_good"}, names); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	wantErrs := []string{
		"mcpServers.bad.maxAttempts is not a server option (known keys: type, command, args, env, envFile, cwd, url, httpUrl, serverUrl, headers, disabled, sandboxEnabled, sandbox, reconnect, failOnStartupError, connectTimeoutMs, callTimeoutMs, closeTimeoutMs, keepAliveMs, includeTools, excludeTools, maxConcurrentCalls, isolation, maxInstances, roots, allowScopes, toolScopes, rateLimit, maxResultBytes)",
		"mcpServers.bad.connectTimeoutMs must be a number of milliseconds, not a string",
		"mcpServers.worse must be a JSON object, not a string",
	}
	if diff := cmp.Diff(wantErrs, strings.Split(err.Error(), "\n")); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if len(cfg.Skipped) != 2 || cfg.Skipped[0].Key != "bad" || cfg.Skipped[1].Key != "worse" {
		t.Errorf("Skipped = %v", cfg.Skipped)
	}

	// Nothing valid, or an error outside the entries: no Config.
	for _, in := range []string{
		`{"mcpServers": {"bad": {"command": 1}}}`,
		`{"mcpServers": {"good": {"command": "x"}, "bad": {"command": 1}}, "mcpServer": {}}`,
	} {
		if cfg, err := Parse([]byte(in), &Options{LookupEnv: noEnv}); cfg != nil || err == nil {
			t.Errorf("Parse(%s) = %v, %v; want only an error", in, cfg, err)
		}
	}

	// Load passes the partial Config on, its errors named by the file.
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"a": {"command": "x"}, "b": {}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = Load(path, &Options{LookupEnv: noEnv})
	if cfg == nil || len(cfg.Servers) != 1 || err == nil || !strings.Contains(err.Error(), "mcpServers.b: give exactly one of") {
		t.Errorf("Load = %v, %v", cfg, err)
	}
}

// Cline's keys: transportType is its "type"; the others are explained.
func TestClineKeys(t *testing.T) {
	cfg, err := Parse([]byte(`{"mcpServers": {
		"web": {"transportType": "sse", "url": "https://h/sse", "alwaysAllow": ["x"], "autoApprove": [], "timeout": 60},
		"fs": {"transportType": "stdio", "command": "x", "disabled": false},
		"http": {"transportType": "streamableHttp", "url": "https://h/mcp"}
	}}`), &Options{LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, s := range cfg.Servers {
		types = append(types, s.Type)
	}
	if diff := cmp.Diff([]string{TypeSSE, TypeStdio, TypeHTTP}, types); diff != "" {
		t.Errorf("types (-want +got):\n%s", diff)
	}
	if len(cfg.Warnings) != 3 {
		t.Errorf("warnings = %q, want one for each of alwaysAllow, autoApprove and timeout", cfg.Warnings)
	}
	_, err = Parse([]byte(`{"mcpServers": {"a": {"type": "stdio", "transportType": "sse", "command": "x"}}}`), &Options{LookupEnv: noEnv})
	if err == nil || !strings.Contains(err.Error(), `give one of "type" and "transportType"`) {
		t.Errorf("type and transportType: %v", err)
	}
}

// A truncated file's error names the line and column where it ends.
func TestTruncatedFileNamesLine(t *testing.T) {
	_, err := Parse([]byte("{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"\n"), nil)
	want := "config is not valid JSON: line 3, column 25: unexpected end of input: close every object, array and string"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}
