package e2e_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/mcpfsm/mcpfsm/conn"
)

// logLines is a slog text handler's output, line by line.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// with returns the lines that contain every one of subs.
func (l *logLines) with(subs ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for line := range strings.Lines(l.buf.String()) {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(line, s)
		}
		if all {
			out = append(out, line)
		}
	}
	return out
}

// TestCauseOfAServerThatExits: a stdio server that writes a line to
// stderr and exits 3 is reported, in its Transition.Err and in exactly one
// log line, with both its exit status and that line, whether it never came
// up (connection failed) or dropped (connection lost).
func TestCauseOfAServerThatExits(t *testing.T) {
	const words = "fatal: missing API key"
	tests := []struct {
		name  string
		flags []string
		to    conn.State
		code  string
	}{
		{"connection failed", []string{"-exit-at-start"}, conn.FailedDisabled, "exit status 1"},
		{"connection lost", []string{"-exit-after", "300ms"}, conn.LostDisabled, "exit status 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			var logs logLines
			e.start(conn.Config{
				Transport: e.command(append(tt.flags, "-last-words", words)...),
				Reconnect: disabled(),
				Logger:    slog.New(slog.NewTextHandler(&logs, nil)),
			})
			tr := e.rec.Await(t, wait, tt.to)
			t.Logf("log: %s", logs.with(string(tt.to)))
			var exit *conn.ServerExit
			if !errors.As(tr.Err, &exit) {
				t.Fatalf("err = %v, want a *ServerExit inside", tr.Err)
			}
			for _, want := range []string{tt.code, words} {
				if !strings.Contains(tr.Err.Error(), want) {
					t.Errorf("Transition.Err = %q, want it to contain %q", tr.Err, want)
				}
			}
			if got := exit.Stderr[len(exit.Stderr)-1]; got != words {
				t.Errorf("last stderr line %q, want %q", got, words)
			}
			if lines := logs.with(tt.code, words); len(lines) != 1 {
				t.Errorf("%d log lines with %q and %q, want 1:\n%s", len(lines), tt.code, words, strings.Join(lines, ""))
			}
		})
	}
}

// TestCauseOfAKilledServer: a server killed from outside is reported as
// killed by SIGKILL, and not as sent by the supervisor.
func TestCauseOfAKilledServer(t *testing.T) {
	e := newEnv(t)
	e.start(conn.Config{Transport: e.command(), Reconnect: fast(3)})
	e.rec.Await(t, wait, conn.Established)
	pid := e.starts.await(t, wait)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	tr := e.rec.Await(t, wait, conn.LostReconnecting)
	t.Logf("err: %v", tr.Err)
	var exit *conn.ServerExit
	if !errors.As(tr.Err, &exit) || exit.Signal != "SIGKILL" || exit.BySupervisor {
		t.Fatalf("err = %v, want a *ServerExit killed by SIGKILL from outside", tr.Err)
	}
	if !strings.Contains(tr.Err.Error(), "killed by SIGKILL") {
		t.Errorf("err = %q, want it to say killed by SIGKILL", tr.Err)
	}
	e.rec.Await(t, wait, conn.Established)
}
