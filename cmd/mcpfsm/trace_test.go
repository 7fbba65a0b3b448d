package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/fsm/trace"
)

// mcpfsm run -trace FILE records a trace that checks against the
// connection table: a start, a crash and its recovery, the shutdown.
func TestRunTrace(t *testing.T) {
	dir := t.TempDir()
	pids, path := filepath.Join(dir, "fix.pids"), filepath.Join(dir, "trace.jsonl")
	cfg := writeConfig(t, obj{"mcpServers": obj{"fix": fixtureServer(t, "-pidlog", pids)}})
	cmd := self(t, "run", "-config", cfg, "-trace", path)
	stderr := newWatcher()
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killAtEnd(t, cmd)
	at := stderr.waitFor(t, 0, "connected and registered tools")
	if err := syscall.Kill(lastPID(t, pids), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	stderr.waitFor(t, at, "reconnected")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(t, cmd, stderr); code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	steps, err := trace.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := trace.Check(conn.Table(), steps); err != nil {
		t.Fatalf("the trace breaks the table: %v", err)
	}
	if n := len(steps); n < 6 || steps[n-1].To != string(conn.Disposed) {
		t.Fatalf("%d steps ending in %q, want the crash, the recovery and the shutdown", n, steps[n-1].To)
	}
	allGone(t, pids)
}
