package main

import (
	"strings"
	"testing"
)

// TestCheckWarnsAboutShortCloseTimeout: a closeTimeoutMs shorter than the
// stdio shutdown schedule (2s + 2s) is valid, but check says the grace
// periods will be shortened; an HTTP server, or a long enough timeout,
// gets no warning.
func TestCheckWarnsAboutShortCloseTimeout(t *testing.T) {
	path := writeConfig(t, obj{"servers": obj{
		"short": obj{"command": "sh", "closeTimeoutMs": 1000},
		"fine":  obj{"command": "sh", "closeTimeoutMs": 4500},
		"web":   obj{"url": "https://h/mcp", "closeTimeoutMs": 1000},
	}})
	code, _, errOut := runCmd(t, "check", "-config", path)
	if code != exitOK {
		t.Fatalf("check: exit %d, stderr:\n%s", code, errOut)
	}
	want := "short: warning: closeTimeoutMs 1000 is shorter than the stdio shutdown schedule (close stdin, 2s, SIGTERM, 2s, SIGKILL); the grace periods are shortened to 375ms so that the server is still killed within it\n"
	if !strings.Contains(errOut, want) {
		t.Errorf("check stderr\n%s\nwant\n%s", errOut, want)
	}
	if strings.Contains(errOut, "fine") || strings.Contains(errOut, "web") {
		t.Errorf("warned about a server whose timing fits:\n%s", errOut)
	}
}
