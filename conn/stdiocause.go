package conn

import (
	"fmt"
	"strings"

	"github.com/mcpfsm/mcpfsm/conn/internal/transport"
)

// StderrTailLines bounds how many of a stdio server's last standard error
// lines a [ServerExit] quotes; [MaxCauseBytes] bounds their size.
const StderrTailLines = 5

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
	// Limit names the sandbox limit the server ran into, such as "out of
	// memory under the sandbox's memoryMB 256" (see [Stdio.Sandbox]);
	// empty when none is known.
	Limit string
	// Stderr holds the last lines the server wrote to standard error (at
	// most StderrTailLines lines and MaxCauseBytes bytes, as written, with
	// control characters replaced by spaces and what looks like a secret,
	// such as a URL's password or a TOKEN=value, by REDACTED), oldest
	// first. The Stdio.Stderr writer gets the lines as written.
	Stderr []string
}

// Error reads "the server exited: exit status 3; stderr: <lines>", "the
// server was killed by SIGKILL[ (sent by the supervisor)]; ..." or, under
// a sandbox's limit, "the server exited: out of memory under the
// sandbox's memoryMB 256 (exit status 2); ...", the lines separated by
// " | ".
func (e *ServerExit) Error() string {
	var b strings.Builder
	if e.Limit != "" {
		// The limit is the news; the status or signal says how it showed.
		how := fmt.Sprintf("exit status %d", e.Code)
		if e.Signal != "" {
			how = "killed by " + e.Signal
		}
		fmt.Fprintf(&b, "the server exited: %s (%s)", e.Limit, how)
	} else if e.Signal != "" {
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

// The bound is spelled out above for the reader of conn's documentation;
// this fails to compile if it ever parts from the one the transport applies.
const _ = uint(StderrTailLines-transport.TailLines) + uint(transport.TailLines-StderrTailLines)
