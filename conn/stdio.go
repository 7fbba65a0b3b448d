package conn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
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
// is terminated. Its environment is the host's
// without credential-shaped variables (see [ChildEnv]), plus Env.
type Stdio struct {
	// Path is the program to run, looked up in PATH if it has no slash.
	Path string
	// Args are the arguments after the program name.
	Args []string
	// Env holds extra KEY=VALUE entries; they override the host's.
	Env []string
	// Dir is the working directory; empty means the host's.
	Dir string
	// Stderr receives the server's standard error. Nil discards it.
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
	p, err := startProcess(ctx, t.cfg)
	if err != nil {
		return nil, err
	}
	t.proc = p
	inner, err := (&mcp.IOTransport{Reader: p.stdout, Writer: p.stdin}).Connect(ctx)
	if err != nil {
		p.terminate()
		return nil, err
	}
	return &stdioConn{Connection: inner, p: p}, nil
}

// Terminate implements [Terminator].
func (t *stdioTransport) Terminate() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.terminated = true
	if t.proc == nil {
		return closedChan
	}
	return t.proc.terminate()
}

// stdioConn closes the SDK connection and then waits, bounded, for the
// process to be gone, so that a session's Close means the child is reaped.
type stdioConn struct {
	mcp.Connection
	p *process
}

func (c *stdioConn) Close() error {
	err := c.Connection.Close()
	done := c.p.terminate()
	t := time.NewTimer(3*c.p.grace + time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		return fmt.Errorf("conn: server process %d did not exit after SIGKILL", c.p.pid)
	}
	return err
}

// process is one running server and its process group.
type process struct {
	pid    int
	os     *os.Process
	grace  time.Duration
	stdin  *os.File // our write end
	stdout *os.File // our read end
	exited chan struct{}

	termOnce sync.Once
}

func startProcess(ctx context.Context, cfg Stdio) (*process, error) {
	cmd := exec.Command(cfg.Path, cfg.Args...)
	cmd.Env = ChildEnv(os.Environ(), cfg.Env)
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
	var errR, errW *os.File
	switch w := cfg.Stderr.(type) {
	case nil:
	case *os.File:
		cmd.Stderr = w
	default:
		if errR, errW, err = os.Pipe(); err != nil {
			inR.Close()
			inW.Close()
			outR.Close()
			outW.Close()
			return nil, err
		}
		cmd.Stderr = errW
	}
	err = cmd.Start()
	// The child holds its own copies of these ends now.
	inR.Close()
	outW.Close()
	if errW != nil {
		errW.Close()
	}
	if err != nil {
		inW.Close()
		outR.Close()
		if errR != nil {
			errR.Close()
		}
		return nil, fmt.Errorf("start %s: %w", cfg.Path, err)
	}
	p := &process{pid: cmd.Process.Pid, os: cmd.Process, grace: cfg.TerminateDuration, stdin: inW, stdout: outR, exited: make(chan struct{})}
	var copied chan struct{}
	if errR != nil {
		copied = make(chan struct{})
		go func() {
			defer close(copied)
			defer errR.Close()
			// io.Copy uses a fixed buffer: a stderr flood costs no memory.
			_, _ = io.Copy(cfg.Stderr, errR)
		}()
	}
	go func() {
		_ = cmd.Wait()
		// The leader is gone; whatever it started in its group goes too.
		p.signal(stepKill)
		if copied != nil {
			<-copied
		}
		close(p.exited)
	}()
	return p, nil
}

// terminate shuts the process down: close stdin, wait, ask the group to
// stop (SIGTERM), wait, kill the group (SIGKILL). It returns the exited
// channel at once.
func (p *process) terminate() <-chan struct{} {
	p.termOnce.Do(func() {
		_ = p.stdin.Close()
		go func() {
			t := time.NewTimer(p.grace)
			defer t.Stop()
			for _, step := range []terminateStep{stepTerm, stepKill} {
				select {
				case <-p.exited:
					return
				case <-t.C:
				}
				p.signal(step)
				t.Reset(p.grace)
			}
		}()
	})
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
