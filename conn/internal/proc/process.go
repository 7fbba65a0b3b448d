// Package proc runs an MCP server as a child process: it starts the
// child with an allow-listed environment in a process group of its own,
// learns of its exit without a goroutine or an OS thread of its own where
// the system allows (a pidfd in one shared epoll set on Linux), keeps the
// end of its standard error, writes to its stdin without ever blocking a
// caller past its context, and shuts the group down on a TERM/KILL
// schedule that fits a deadline.
//
// It knows nothing of MCP or of the supervisor: conn's stdio transport
// adapts a [*Process] to the SDK and reports its end to the generation.
package proc

import (
	"context"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Spec describes the process to start.
type Spec struct {
	// Path is the program to run, looked up in PATH if it has no slash.
	Path string
	// Args are the arguments after the program name.
	Args []string
	// Env holds KEY=VALUE entries for the child, over the host's allowed
	// variables (see [AllowedEnv], [InheritedEnv]).
	Env []string
	// InheritEnv passes the host's environment except what looks like a
	// credential, instead of only [DefaultEnvNames].
	InheritEnv bool
	// Dir is the working directory; empty means the host's.
	Dir string
	// Stderr receives the child's standard error, one write at a time, until
	// a Write fails; nil discards it. The tail is kept either way.
	Stderr io.Writer
	// Grace is the grace period after closing stdin before SIGTERM, and
	// after SIGTERM before SIGKILL; it must be positive.
	Grace time.Duration
	// OnExit, if set, is called once the leader exited, before it is
	// reaped, on the goroutine that reaps it, which must not block.
	OnExit func()
	// OnGone, if set, is called once the process is reaped and its group
	// killed, after [Process.Done] is closed, on the same goroutine.
	OnGone func()
}

// Exit is how a reaped process ended.
type Exit struct {
	// Code is the exit status, or -1 when a signal ended the process.
	Code int
	// Signal names the signal that ended the process, such as "SIGKILL";
	// empty when it exited by itself.
	Signal string
	// BySupervisor reports that the shutdown schedule sent that signal.
	BySupervisor bool
}

// GraceWithin is grace, shortened if needed so that both grace periods
// and the kill fit in within (when positive), with a margin of a quarter
// of it (at most 500ms) for the kill and the reaping.
func GraceWithin(grace, within time.Duration) time.Duration {
	if within <= 0 {
		return grace
	}
	margin := min(within/4, 500*time.Millisecond)
	return min(grace, (within-margin)/2)
}

// Process is one running server and its process group, from [Start]
// until it is reaped. Its methods are safe for concurrent use.
type Process struct {
	pid    int
	os     *os.Process
	grace  time.Duration
	stdin  *os.File    // our write end
	w      *pipeWriter // writes lines to stdin
	stdout *exitReader // our read end
	exited chan struct{}
	// onExit reports the leader's exit, and onGone the end of the group;
	// nil when nobody listens.
	onExit func()
	onGone func()

	termMu      sync.Mutex
	termStarted bool
	reaping     bool          // the leader exited: the reaping kills the group, no schedule is needed
	termGrace   time.Duration // of the schedule in progress
	hurry       chan struct{} // closed when a shorter schedule replaces it

	sent  atomic.Int32     // the last terminateStep+1 the shutdown signalled
	tail  *Tail            // the end of standard error
	state *os.ProcessState // how it ended; written before exited is closed
}

// Stdout is the read end of the child's stdout. It reads until every
// writer is gone or, once the child exited, until the pipe is empty; its
// Close ends a read in progress.
func (p *Process) Stdout() io.ReadCloser { return p.stdout }

// Stdin is the write end of the child's stdin, for closing; write lines
// with [Process.WriteLine].
func (p *Process) Stdin() io.WriteCloser { return p.stdin }

// WriteLine writes data, one whole line, to the child's stdin, or returns
// ctx's error when ctx ends first; a line handed to the pipe is then still
// written whole, so the stream never carries half a line. The fast path
// (the pipe takes the line at once) allocates nothing and starts no
// goroutine.
func (p *Process) WriteLine(ctx context.Context, data []byte) error { return p.w.write(ctx, data) }

// StopWrites makes later writes fail; closing stdin (Terminate does) ends
// a write in progress.
func (p *Process) StopWrites() { p.w.close() }

// Done is closed once the process is reaped and its group killed.
func (p *Process) Done() <-chan struct{} { return p.exited }

// Terminate shuts the process down: close stdin, wait the grace period,
// SIGTERM the group, wait again, SIGKILL the group. With within positive,
// the grace periods are shortened so that the group is killed well within
// it (see [GraceWithin]); a later call with a shorter deadline hurries a
// shutdown in progress. It returns [Process.Done] at once.
func (p *Process) Terminate(within time.Duration) <-chan struct{} {
	return p.terminate(GraceWithin(p.grace, within))
}

// StderrTail returns the end of what the child wrote to standard error,
// at least the last [TailBytes] bytes of it, as written.
func (p *Process) StderrTail() []byte { return p.tail.Bytes() }

// Exit reports how the process ended, once it is reaped; ok is false while
// it runs.
func (p *Process) Exit() (e Exit, ok bool) {
	select {
	case <-p.exited:
	default:
		return Exit{}, false
	}
	if p.state == nil {
		return Exit{}, false
	}
	return exitOf(p.state, p.sentSignal()), true
}

// exitOf describes a reaped process; sent is the signal the shutdown
// sent it last, if any.
func exitOf(st *os.ProcessState, sent string) Exit {
	e := Exit{Code: st.ExitCode()}
	if sig := exitSignal(st); sig != "" {
		e.Code, e.Signal, e.BySupervisor = -1, sig, sig == sent
	}
	return e
}

// sentSignal names the last signal the shutdown schedule sent.
func (p *Process) sentSignal() string {
	if n := p.sent.Load(); n > 0 {
		return terminateStep(n - 1).signalName()
	}
	return ""
}

// shutdownSignal sends a step's signal as part of a shutdown the
// Terminate started, and remembers it for Exit.
func (p *Process) shutdownSignal(step terminateStep) {
	p.sent.Store(int32(step) + 1)
	p.signal(step)
}

// terminate shuts the process down: close stdin, wait grace, ask the
// group to stop (SIGTERM), wait grace, kill the group (SIGKILL). It
// returns the exited channel at once. A later call with a shorter grace
// hurries a shutdown in progress.
func (p *Process) terminate(grace time.Duration) <-chan struct{} {
	p.termMu.Lock()
	defer p.termMu.Unlock()
	if p.termStarted && grace >= p.termGrace {
		return p.exited
	}
	first := !p.termStarted
	p.termStarted, p.termGrace = true, grace
	if first {
		_ = p.stdin.Close()
	} else {
		close(p.hurry)
	}
	if p.reaping {
		// The leader is dead and being reaped, which kills the group:
		// no signal of the schedule's could hurry that.
		p.hurry = make(chan struct{})
		return p.exited
	}
	if grace <= 0 {
		// No grace at all: kill now, before returning, so that a host
		// that exits right after leaves nothing behind.
		p.shutdownSignal(stepKill)
		p.hurry = make(chan struct{})
		return p.exited
	}
	hurry := make(chan struct{})
	p.hurry = hurry
	go func() {
		start := time.Now()
		t := time.NewTimer(grace)
		defer t.Stop()
		for i, step := range []terminateStep{stepTerm, stepKill} {
			select {
			case <-p.exited:
				return
			case <-hurry:
				return // a shorter schedule took over
			case <-t.C:
			}
			p.shutdownSignal(step)
			t.Reset(time.Duration(i+2)*grace - time.Since(start))
		}
	}()
	return p.exited
}
