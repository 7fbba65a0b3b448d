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
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfsm/mcpfsm/internal/broadcast"
)

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
	reaping     bool             // the leader exited: the reaping kills the group, no schedule is needed
	termGrace   time.Duration    // of the schedule in progress
	hurry       broadcast.Signal // when a shorter schedule replaces the running one

	sent  atomic.Int32     // the last terminateStep+1 the shutdown signalled
	tail  *Tail            // the end of standard error
	state *os.ProcessState // how it ended; written before exited is closed
	sb    Launched         // what Spec.Launch started; nil when none
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
	ex := exitOf(p.state, p.sentSignal())
	if p.sb != nil && !ex.BySupervisor {
		ex.Limit = p.sb.Limit(p.state)
	}
	return ex, true
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
		p.hurry.Notify()
	}
	if p.reaping {
		// The leader is dead and being reaped, which kills the group:
		// no signal of the schedule's could hurry that.
		return p.exited
	}
	if grace <= 0 {
		// No grace at all: kill now, before returning, so that a host
		// that exits right after leaves nothing behind.
		p.shutdownSignal(stepKill)
		return p.exited
	}
	hurry := p.hurry.C()
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

// Start starts the process described by spec. The process runs until it
// exits or is terminated, whatever becomes of ctx; a launcher's setup
// (Spec.Launch) is bounded by ctx.
func Start(ctx context.Context, spec Spec) (*Process, error) {
	return startProcess(ctx, spec)
}

func startProcess(ctx context.Context, cfg Spec) (*Process, error) {
	if err := checkDir(cfg.Dir); err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.Path, err)
	}
	cmd := exec.Command(cfg.Path, cfg.Args...)
	cmd.Env = AllowedEnv(os.Environ(), cfg.Env)
	if cfg.InheritEnv {
		cmd.Env = InheritedEnv(os.Environ(), cfg.Env)
	}
	cmd.Dir = cfg.Dir
	ownGroup(cmd)
	// Own os.Pipe ends rather than StdinPipe/StdoutPipe: exec closes those
	// when Wait returns, which would drop a reply the server wrote just
	// before exiting.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	// Standard error always goes through a pipe of ours: its end is kept
	// for StderrTail, and copied to cfg.Stderr if set.
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stderr = errW
	var sb Launched
	if cfg.Launch != nil {
		sb, err = cfg.Launch(ctx, cmd, cfg.Logger)
		if err == nil && cmd.Process == nil {
			err = errors.New("the launcher returned without starting the command")
		}
	} else {
		err = cmd.Start()
	}
	// The environment was the child's to copy; the command stays in
	// memory, for Wait, as long as the server runs.
	cmd.Env = nil
	// The child holds its own copies of these ends now.
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("start %s: %w", cfg.Path, err)
	}
	p := &Process{pid: cmd.Process.Pid, os: cmd.Process, grace: cfg.Grace, stdin: inW, w: newPipeWriter(inW), stdout: &exitReader{f: outR, eof: func() { exitedEarly(cmd.Process.Pid) }},
		exited: make(chan struct{}), tail: &Tail{}, onExit: cfg.OnExit, onGone: cfg.OnGone, sb: sb}
	sink := &stderrSink{tail: p.tail, out: cfg.Stderr}
	if sb != nil {
		sink.watch = sb.StderrWatch()
	}
	errCopy := startStderr(errR, sink)
	reaped := func() {
		p.termMu.Lock()
		p.reaping = true
		p.termMu.Unlock()
		if p.onExit != nil {
			p.onExit()
		}
		_ = cmd.Wait()
		p.state = cmd.ProcessState
		// The leader is reaped: what it wrote is in the pipes, and the
		// readers stop once those are empty, whoever else holds them.
		p.stdout.leaderExited()
		errCopy.leaderExited()
		// Whatever the leader started in its group goes too. The barrier
		// is the process group, not the stderr copier.
		p.signal(stepKill)
		if sb != nil {
			sb.Close() // a sandbox's proxy serves nobody now
		}
		// Its last words are in the pipe: give the copier a moment to
		// drain them into the tail for StderrTail, but no longer, since
		// a grandchild that left the group may keep writing.
		t := time.NewTimer(stderrDrain)
		select {
		case <-errCopy.copied():
		case <-t.C:
		}
		t.Stop()
		p.stdout.processGone()
		close(p.exited)
		if p.onGone != nil {
			p.onGone()
		}
	}
	// Where the system allows, the exit is awaited with no goroutine and
	// no OS thread of this process's own, and cmd.Wait then reaps at
	// once; elsewhere a goroutine waits in cmd.Wait, holding a thread.
	// Either way the reaping, and what OnExit and OnGone run, have a
	// goroutine of their own: never the reader of stdout (whose EOF may
	// hurry the report, see exitedEarly), which its owner may need to go
	// on reading meanwhile.
	if !exitWatch(p.pid, func() { go reaped() }) {
		go reaped()
	}
	return p, nil
}
