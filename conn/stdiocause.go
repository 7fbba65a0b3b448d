package conn

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mcpfsm/mcpfsm/internal/redact"
)

// StderrTailLines bounds how many of a stdio server's last standard error
// lines a [ServerExit] quotes; [MaxCauseBytes] bounds their size.
const StderrTailLines = 5

// stderrDrain bounds how long, after a stdio server's process exited,
// its standard error is still read: what it wrote before exiting is in
// the pipe already, and a grandchild that keeps the pipe open must not
// hold the close barrier.
const stderrDrain = 100 * time.Millisecond

// ServerExit is how a stdio server's process ended, with its last words:
// the cause inside the [*FailedError] or [*LostError] of a generation
// whose server exited. Reach it with errors.As.
type ServerExit struct {
	// Code is the exit status, or -1 when a signal ended the process.
	Code int
	// Signal names the signal that ended the process, such as "SIGKILL";
	// empty when it exited by itself.
	Signal string
	// BySupervisor reports that the supervisor sent that signal, after
	// the grace periods of a shutdown it started.
	BySupervisor bool
	// Stderr holds the last lines the server wrote to standard error (at
	// most StderrTailLines lines and MaxCauseBytes bytes, as written, with
	// control characters replaced by spaces and what looks like a secret,
	// such as a URL's password or a TOKEN=value, by REDACTED), oldest
	// first. The Stdio.Stderr writer gets the lines as written.
	Stderr []string
}

// Error reads "the server exited: exit status 3; stderr: <lines>" or
// "the server was killed by SIGKILL[ (sent by the supervisor)]; ...",
// the lines separated by " | ".
func (e *ServerExit) Error() string {
	var b strings.Builder
	if e.Signal != "" {
		b.WriteString("the server was killed by " + e.Signal)
		if e.BySupervisor {
			b.WriteString(" (sent by the supervisor after the grace period)")
		}
	} else {
		fmt.Fprintf(&b, "the server exited: exit status %d", e.Code)
	}
	if len(e.Stderr) > 0 {
		b.WriteString("; stderr: " + strings.Join(e.Stderr, " | "))
	}
	return b.String()
}

// stderrTail keeps the end of a server's standard error.
type stderrTail struct {
	mu  sync.Mutex
	buf []byte // at most 2*MaxCauseBytes: the end of what was written
}

func (t *stderrTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(p) >= MaxCauseBytes {
		t.buf = append(t.buf[:0], p[len(p)-MaxCauseBytes:]...)
		return len(p), nil
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*MaxCauseBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-MaxCauseBytes:]...)
	}
	return len(p), nil
}

// lines returns the last StderrTailLines non-empty lines, at most
// MaxCauseBytes in all (the newest kept).
func (t *stderrTail) lines() []string {
	t.mu.Lock()
	b := bytes.Clone(t.buf)
	t.mu.Unlock()
	var out []string
	size := 0
	raw := bytes.Split(b, []byte("\n"))
	for i := len(raw) - 1; i >= 0 && len(out) < StderrTailLines; i-- {
		line := redact.Line(quote(raw[i], true))
		if line == "" {
			continue
		}
		if size+len(line) > MaxCauseBytes {
			break
		}
		size += len(line)
		out = append(out, line)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// exitOf describes a reaped process; sent is the signal the supervisor's
// shutdown sent it last, if any.
func exitOf(st *os.ProcessState, sent string, tail []string) *ServerExit {
	e := &ServerExit{Code: st.ExitCode(), Stderr: tail}
	if sig := exitSignal(st); sig != "" {
		e.Code, e.Signal, e.BySupervisor = -1, sig, sig == sent
	}
	return e
}

// cause implements causer: how the process ended, once it has.
func (t *stdioTransport) cause() error {
	t.mu.Lock()
	p := t.proc
	t.mu.Unlock()
	if p == nil {
		return nil
	}
	select {
	case <-p.exited:
	default:
		return nil // still running: the barrier expired
	}
	if p.state == nil {
		return nil
	}
	return exitOf(p.state, p.sentSignal(), p.tail.lines())
}
