package config

import (
	"strings"
	"testing"
)

// maxResultBytes is read as a server's limit; a value that is not a
// positive whole number is an error naming its path and the fix.
func TestMaxResultBytes(t *testing.T) {
	cfg, err := Parse([]byte(`{"mcpServers": {"a": {"command": "x", "maxResultBytes": 65536}, "b": {"command": "y"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Servers[0].MaxResultBytes; got != 65536 {
		t.Errorf("a's MaxResultBytes = %d, want 65536", got)
	}
	if got := cfg.Servers[1].MaxResultBytes; got != 0 {
		t.Errorf("b's MaxResultBytes = %d, want 0 (serve's default)", got)
	}
	for _, bad := range []string{"0", "-1", "1.5", `"64k"`} {
		_, err := Parse([]byte(`{"mcpServers": {"a": {"command": "x", "maxResultBytes": `+bad+`}}}`), nil)
		if err == nil || !strings.Contains(err.Error(), "mcpServers.a.maxResultBytes") || !strings.Contains(err.Error(), "positive number of bytes") {
			t.Errorf("maxResultBytes %s: %v; want an error naming the path and the fix", bad, err)
		}
	}
}

// The "toolList" block says how serve lists tools; a bad one is an error
// naming its path and the fix.
func TestToolsBlock(t *testing.T) {
	cfg, err := Parse([]byte(`{"mcpServers": {"a": {"command": "x"}}, "toolList": {"mode": "search", "pin": ["mcp__a__read"]}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tools.Mode != ToolsSearch || len(cfg.Tools.Pin) != 1 || cfg.Tools.Pin[0] != "mcp__a__read" {
		t.Errorf("Tools = %+v", cfg.Tools)
	}
	for bad, want := range map[string]string{
		`{"mode": "all"}`:            `toolList.mode is "all": give "full"`,
		`{"pin": ["x"]}`:             `toolList: pin lists tools in search mode only`,
		`{"mode": "search", "x": 1}`: `toolList.x is not a toolList key`,
	} {
		_, err := Parse([]byte(`{"mcpServers": {"a": {"command": "x"}}, "toolList": `+bad+`}`), nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("toolList %s: %v; want %q", bad, err, want)
		}
	}
}
