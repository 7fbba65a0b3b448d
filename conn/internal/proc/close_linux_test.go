//go:build linux

package proc

import (
	"context"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestServerWritingAfterCloseIsNotKilledBySIGPIPE: closing the
// connection's stdout reader ends reading at once, but the pipe stays open
// until the process is gone: a server that writes to stdout while it
// shuts down keeps running (until its shutdown kills it) instead of dying
// of SIGPIPE.
func TestServerWritingAfterCloseIsNotKilledBySIGPIPE(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	said := newChunkWriter(len("survived\n"))
	cfg := Spec{Path: "sh", Args: []string{"-c", "read x; echo late reply; echo survived >&2; exec sleep 60"},
		Stderr: said, Grace: time.Second}
	p, err := startProcess(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { awaitClosed(t, p.terminate(0), "the killed server's exit") }()

	readErr := make(chan error, 1)
	go func() {
		_, err := p.stdout.Read(make([]byte, 64))
		readErr <- err
	}()
	if err := p.stdout.Close(); err != nil {
		t.Fatal(err)
	}
	awaitErrIs(t, readErr, os.ErrClosed, "the read in progress ended by Close")
	if _, err := p.stdin.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	awaitClosed(t, said.got, "the server to go on after writing to stdout")
	select {
	case <-p.exited:
		t.Fatalf("the server exited after writing to stdout: %v", p.state)
	default:
	}
	awaitClosed(t, p.terminate(0), "the killed server's exit")
	if sig := exitSignal(p.state); sig != "SIGKILL" {
		t.Errorf("the server ended by %q, want SIGKILL from its shutdown", sig)
	}
}

// TestShorterScheduleTakesOver: a shutdown with a long grace is hurried
// by a later one with a short grace, which kills a server that ignores
// SIGTERM on its own schedule; the first schedule's goroutine ends.
func TestShorterScheduleTakesOver(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p, err := startProcess(context.Background(), Spec{Path: "sh", Args: []string{"-c", `trap "" TERM; echo ready; exec sleep 60`}})
	if err != nil {
		t.Fatal(err)
	}
	// SIGTERM must not come before the trap is set: a loaded machine can
	// take longer than the short grace to run the shell's first line, and
	// the shell would then die of SIGTERM, not of the SIGKILL under test.
	ready := make(chan error, 1)
	go func() {
		_, err := p.stdout.Read(make([]byte, len("ready\n")))
		ready <- err
	}()
	awaitErrIs(t, ready, nil, "the shell's trap to be set")
	p.terminate(time.Hour)
	awaitClosed(t, p.terminate(20*time.Millisecond), "the exit on the shorter schedule")
	if sig := exitSignal(p.state); sig != "SIGKILL" {
		t.Errorf("the server ended by %q, want SIGKILL from the shorter schedule", sig)
	}
}
