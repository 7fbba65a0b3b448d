package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckPolicy: check prints each server's per-caller policy, warns of
// a toolScopes pattern the file shows guards nothing, and refuses a bad
// rateLimit naming its path.
func TestCheckPolicy(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "gh-mcp"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	good := writeConfig(t, obj{"servers": obj{"gh": obj{"command": "gh-mcp",
		"includeTools": []string{"get_issue", "delete_issue"},
		"allowScopes":  []string{"gh:read"},
		"toolScopes":   obj{"delete_*": []string{"gh:admin"}, "create_*": []string{"gh:admin"}},
		"rateLimit":    "5/s",
	}}})
	code, out, errOut := runCmd(t, "check", "-config", good)
	if code != 0 {
		t.Fatalf("check: exit %d, stderr:\n%s", code, errOut)
	}
	if want := "  policy:    callers need scope gh:read; toolScopes for create_*, delete_* (matched against the server's tools when serve lists them); at most 5/s per caller\n"; !strings.Contains(out, want) {
		t.Errorf("check output lacks %q:\n%s", want, out)
	}
	if want := `warning: servers.gh.toolScopes["create_*"] matches none of the tools includeTools serves (get_issue, delete_issue): it guards nothing`; !strings.Contains(errOut, want) {
		t.Errorf("check stderr lacks %q:\n%s", want, errOut)
	}
	bad := writeConfig(t, obj{"servers": obj{"gh": obj{"command": "gh-mcp", "rateLimit": "5 per second"}}})
	code, _, errOut = runCmd(t, "check", "-config", bad)
	if want := `servers.gh.rateLimit: "5 per second" is not a rate: give calls per period, as "5/s", "100/m" or "1000/h"`; code != exitFail || !strings.Contains(errOut, want) {
		t.Errorf("check bad rateLimit: exit %d, stderr:\n%s\nwant %q", code, errOut, want)
	}
}
