package main

import (
	"strings"
	"testing"
)

// tools -search prints the best matches, best first, with their scores.
func TestToolsSearch(t *testing.T) {
	path := writeConfig(t, obj{"servers": obj{"fix": fixtureServer(t)}})
	code, out, errOut := runCmd(t, "tools", "-config", path, "-timeout", "20s", "-search", "return my text", "-limit", "1")
	if code != 0 {
		t.Fatalf("tools -search: exit %d, stderr:\n%s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "TOOL") || !strings.HasPrefix(lines[1], "mcp__fix__echo ") {
		t.Errorf("tools -search output:\n%s\nwant the header and mcp__fix__echo alone", out)
	}
	if code, _, errOut := runCmd(t, "tools", "-config", path, "-search", "x", "-limit", "0"); code != exitUsage || !strings.Contains(errOut, "-limit") {
		t.Errorf("-limit 0: exit %d, stderr:\n%s", code, errOut)
	}
	if code, _, errOut := runCmd(t, "serve", "-config", path, "-tools", "all"); code != exitUsage || !strings.Contains(errOut, "-tools") {
		t.Errorf("serve -tools all: exit %d, stderr:\n%s", code, errOut)
	}
}
