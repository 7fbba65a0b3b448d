package conn

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

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultTerminateDuration is how long a stdio server gets to exit after its
// stdin is closed, and again after SIGTERM, before it is killed. Two grace
// periods plus the kill fit inside the default close timeout.
const DefaultTerminateDuration = 2 * time.Second

// Stdio is a [Transport] that runs a server as a child process and speaks
// MCP over its stdin and stdout. Every generation starts a new process.
//
// On Unix the child runs in its own process group, and the whole group is
// killed when the child exits or is shut down, so wrappers such as "npx" or
// "sh -c" leave no grandchildren behind. On Windows only the child itself
// is terminated.
//
// The child's environment is Env on top of a few of the host's variables
// that locate and describe the user's system (PATH, HOME, USER, the
// locale...: see [DefaultEnvNames]); nothing else of the host's reaches
// it, since secrets hide under innocent names (a DATABASE_URL with a
// password, MYSQL_PWD, SENTRY_DSN). Name what a server needs in Env, or
// set InheritEnv.
type Stdio struct {
	// Path is the program to run, looked up in PATH if it has no slash.
	Path string
	// Args are the arguments after the program name.
	Args []string
	// Env holds KEY=VALUE entries for the child; they override the
	// host's.
	Env []string
	// InheritEnv passes the host's whole environment except the
	// variables that look like credentials by name or value (see
	// the package doc), instead of only [DefaultEnvNames]. The scrubbing is
	// a heuristic: prefer naming variables in Env.
	InheritEnv bool
	// Dir is the working directory; empty means the host's.
	Dir string
	// Stderr receives the server's standard error, one write at a time.
	// Nil discards it. A Write that blocks holds back only this server
	// (once its stderr pipe fills); after a Write fails, Stderr gets
	// nothing more, and the pipe is still read for [ServerExit].
	Stderr io.Writer
	// TerminateDuration is the grace period after closing stdin before
	// SIGTERM, and after SIGTERM before SIGKILL. Zero means
	// DefaultTerminateDuration.
	TerminateDuration time.Duration
}

// Command returns a [Stdio] transport that runs name with args.
func Command(name string, args ...string) *Stdio {
	return &Stdio{Path: name, Args: args}
}

// Open returns a single-use SDK transport that starts the process when the
// SDK connects it. The returned transport implements [Terminator].
func (s *Stdio) Open(context.Context) (mcp.Transport, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	cfg := *s
	cfg.Args = append([]string(nil), s.Args...)
	cfg.Env = append([]string(nil), s.Env...)
	if cfg.TerminateDuration <= 0 {
		cfg.TerminateDuration = DefaultTerminateDuration
	}
	return &stdioTransport{cfg: cfg}, nil
}

type stdioTransport struct {
	cfg Stdio

	mu         sync.Mutex
	sink       endSink // told of the process's end (reportTo); may be nil
	proc       *process
	terminated bool // Terminate ran before a process existed: never start one
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Connect starts the process. The SDK calls it once, from Client.Connect.
func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.terminated || t.proc != nil {
		return nil, errors.New("conn: stdio transport already used or terminated")
	}
	p, err := startProcess(ctx, t.cfg, t.reporter())
	if err != nil {
		return nil, err
	}
	t.proc = p
	inner, err := (&mcp.IOTransport{Reader: p.stdout, Writer: p.stdin}).Connect(ctx)
	if err != nil {
		_ = p.stdout.Close()
		p.terminate(p.grace)
		return nil, err
	}
	return &stdioConn{Connection: inner, p: p, w: newPipeWriter(p.stdin)}, nil
}

// reportTo implements endReporter: the process it starts reports its
// exit and its connection's close to sink.
func (t *stdioTransport) reportTo(sink endSink) {
	t.mu.Lock()
	t.sink = sink
	t.mu.Unlock()
}

// Terminate implements [Terminator].
func (t *stdioTransport) Terminate() <-chan struct{} { return t.terminateWithin(0) }

// terminateWithin is Terminate with the grace periods shortened, when
// within is positive, so that the group is killed well within it.
func (t *stdioTransport) terminateWithin(within time.Duration) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.terminated = true
	if t.proc == nil {
		return closedChan
	}
	return t.proc.terminate(graceWithin(t.proc.grace, within))
}

// GracePeriod is the grace period a Supervisor gives a stdio server with
// [Stdio.TerminateDuration] grace and [Config.CloseTimeout] closeTimeout:
// grace, shortened if needed so that both grace periods and the kill fit
// in closeTimeout, with a margin of a quarter of it (at most 500ms) for
// the kill and the reaping. The process group is always SIGKILLed within
// CloseTimeout.
func GracePeriod(grace, closeTimeout time.Duration) time.Duration {
	return graceWithin(grace, closeTimeout)
}

func graceWithin(grace, within time.Duration) time.Duration {
	if within <= 0 {
		return grace
	}
	margin := min(within/4, 500*time.Millisecond)
	return min(grace, (within-margin)/2)
}

// process is one running server and its process group.
type process struct {
	pid    int
	os     *os.Process
	grace  time.Duration
	stdin  *os.File    // our write end
	stdout *exitReader // our read end
	exited chan struct{}
	// ended reports the process's exit and its connection's close, and
	// gone the end of the group; nil when nobody listens.
	ended func(exited bool)
	gone  func()

	termMu      sync.Mutex
	termStarted bool
	reaping     bool          // the leader exited: the reaping kills the group, no schedule is needed
	termGrace   time.Duration // of the schedule in progress
	hurry       chan struct{} // closed when a shorter schedule replaces it

	sent  atomic.Int32     // the last terminateStep+1 the shutdown signalled
	tail  *stderrTail      // the end of standard error, for ServerExit
	state *os.ProcessState // how it ended; written before exited is closed
}

// sentSignal names the last signal the shutdown schedule sent.
func (p *process) sentSignal() string {
	if n := p.sent.Load(); n > 0 {
		return terminateStep(n - 1).signalName()
	}
	return ""
}

// shutdownSignal sends a step's signal as part of a shutdown the
// supervisor started, and remembers it for ServerExit.
func (p *process) shutdownSignal(step terminateStep) {
	p.sent.Store(int32(step) + 1)
	p.signal(step)
}

func startProcess(ctx context.Context, cfg Stdio, r processReports) (*process, error) {
	if err := checkDir(cfg.Dir); err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.Path, err)
	}
	cmd := exec.Command(cfg.Path, cfg.Args...)
	cmd.Env = allowedEnv(os.Environ(), cfg.Env)
	if cfg.InheritEnv {
		cmd.Env = inheritedEnv(os.Environ(), cfg.Env)
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
	// for ServerExit, and copied to cfg.Stderr if set.
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stderr = errW
	err = cmd.Start()
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
	p := &process{pid: cmd.Process.Pid, os: cmd.Process, grace: cfg.TerminateDuration, stdin: inW, stdout: &exitReader{f: outR, eof: func() { exitedEarly(cmd.Process.Pid) }},
		exited: make(chan struct{}), tail: &stderrTail{}, ended: r.ended, gone: r.gone}
	errCopy := startStderr(errR, &stderrSink{tail: p.tail, out: cfg.Stderr})
	reaped := func() {
		p.termMu.Lock()
		p.reaping = true
		p.termMu.Unlock()
		p.reportEnd(true)
		_ = cmd.Wait()
		p.state = cmd.ProcessState
		// The leader is reaped: what it wrote is in the pipes, and the
		// readers stop once those are empty, whoever else holds them.
		p.stdout.leaderExited()
		errCopy.leaderExited()
		// Whatever the leader started in its group goes too. The barrier
		// is the process group, not the stderr copier.
		p.signal(stepKill)
		// Its last words are in the pipe: give the copier a moment to
		// drain them into the tail for ServerExit, but no longer, since
		// a grandchild that left the group may keep writing.
		t := time.NewTimer(stderrDrain)
		select {
		case <-errCopy.copied():
		case <-t.C:
		}
		t.Stop()
		p.stdout.processGone()
		close(p.exited)
		if p.gone != nil {
			p.gone()
		}
	}
	// Where the system allows, the exit is awaited with no goroutine and
	// no OS thread of this process's own, and cmd.Wait then reaps at
	// once; elsewhere a goroutine waits in cmd.Wait, holding a thread.
	// Either way the reaping, and the loop that it may run (startLoop), have
	// a goroutine of their own: never the SDK's reader, which may have to
	// retire a call that a host's callback waits for.
	if !exitWatch(p.pid, func() { go reaped() }) {
		go reaped()
	}
	return p, nil
}

// processReports is what a process reports to, and how; the zero value
// reports nothing.
type processReports struct {
	ended func(exited bool)
	gone  func()
}

// reporter returns the reports of t's process, to t's sink.
func (t *stdioTransport) reporter() processReports {
	if t.sink == nil {
		return processReports{}
	}
	sink := t.sink
	return processReports{
		ended: func(exited bool) { sink.sessionEnded(t, exited) },
		gone:  func() { sink.processGone(t) },
	}
}

// reportEnd reports the process's exit or its connection's close.
func (p *process) reportEnd(exited bool) {
	if p.ended != nil {
		p.ended(exited)
	}
}

// terminate shuts the process down: close stdin, wait grace, ask the
// group to stop (SIGTERM), wait grace, kill the group (SIGKILL). It
// returns the exited channel at once. A later call with a shorter grace
// hurries a shutdown in progress.
func (p *process) terminate(grace time.Duration) <-chan struct{} {
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

// validate reports a Stdio that could never start, so that Start rejects it.
func (s *Stdio) validate() error {
	if s.Path == "" {
		return fmt.Errorf("Stdio.Path is empty: name the server program to run, as in conn.Command(\"npx\", ...)")
	}
	if s.TerminateDuration < 0 {
		return fmt.Errorf("Stdio.TerminateDuration is %v: use a positive duration, or zero for %v", s.TerminateDuration, DefaultTerminateDuration)
	}
	return nil
}
