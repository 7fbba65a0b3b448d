package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
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

// The token serve makes for a loopback -listen is kept in a file while
// serve runs and removed when it exits.
func TestMadeTokenFileRemovedAtExit(t *testing.T) {
	cfg := writeConfig(t, obj{"mcpServers": obj{"fix": obj{"command": fixture.Build(t)}}})
	t.Setenv("MCPFSM_TOKEN", "")
	cmd, stderr, _ := serveListening(t, nil, "serve", "-config", cfg, "-listen", "127.0.0.1:0")
	at := stderr.waitFor(t, 0, "need the token in ")
	file := strings.Fields(stderr.String()[at:])[0]
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("token file %s while serve runs: %v", file, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(t, cmd, stderr); code != exitOK {
		t.Errorf("exit %d; stderr:\n%s", code, stderr)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("token file %s after serve exited: %v, want it removed", file, err)
	}
}

// serve with a terminal on stdin says what it waits for and what the
// person may have meant.
func TestServeInATerminalSaysWhatItWaitsFor(t *testing.T) {
	old := stdinIsTerminal
	stdinIsTerminal = func() bool { return true }
	defer func() { stdinIsTerminal = old }()
	stdin := os.Stdin
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.Close() // EOF: serve stops at once after the hint
	os.Stdin = r
	defer func() { os.Stdin = stdin; r.Close() }()
	cfg := writeConfig(t, obj{"mcpServers": obj{"fix": obj{"command": fixture.Build(t)}}})
	_, _, errOut := runCmd(t, "serve", "-config", cfg)
	for _, want := range []string{"stdin is a terminal", "mcpfsm tools -config " + cfg, "-listen 127.0.0.1:8808", `"args": ["serve", "-config", "` + cfg + `"]`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}
