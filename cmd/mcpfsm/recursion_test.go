package main

import (
	"os"
	"strings"
	"testing"
)

// A config that runs mcpfsm serve on itself is refused by check and by
// serve, before any server starts.
func TestServeOnItselfIsRefused(t *testing.T) {
	path := writeConfig(t, obj{})
	cfg := `{"mcpServers": {"mcpfsm": {"command": "mcpfsm", "args": ["serve", "-config", "` + path + `"]}}}`
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"check", "serve"} {
		code, _, errOut := runCmd(t, cmd, "-config", path)
		if code != exitFail || !strings.Contains(errOut, "server mcpfsm: the server is mcpfsm serve of this same config") {
			t.Errorf("%s of a config serving itself: exit %d, stderr:\n%s", cmd, code, errOut)
		}
	}
}
