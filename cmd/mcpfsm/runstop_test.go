package main

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/mcpfsm/mcpfsm/internal/fixture"
)

// run stopped by SIGTERM sent twice, as timeout(1) sends it (to the
// process, then to its group), exits 0 once every server is gone: the
// second signal only skips the grace periods. The server ignores SIGTERM
// and EOF and has a minute to close, so the second signal always lands
// while run waits for it.
func TestRunExitsZeroOnDoubleSIGTERM(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "fix.pids")
	cfg := writeConfig(t, obj{"mcpServers": obj{"memory": obj{
		"command": fixture.Build(t), "args": []string{"-pidlog", pids, "-ignore-sigterm", "-ignore-eof"}, "closeTimeoutMs": 60000,
	}}})
	cmd := self(t, "run", "-config", cfg)
	stderr := newWatcher()
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stderr.waitFor(t, 0, "supervising 1 server(s)")
	stderr.waitFor(t, 0, "state=established")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	stderr.waitFor(t, 0, "shutting down")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(t, cmd, stderr); code != exitOK {
		t.Errorf("exit %d, want 0; stderr:\n%s", code, stderr)
	}
	allGone(t, pids)
}
