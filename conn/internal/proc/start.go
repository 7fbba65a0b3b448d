package proc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Start starts the process described by spec. The process runs until it
// exits or is terminated, whatever becomes of ctx.
func Start(ctx context.Context, spec Spec) (*Process, error) {
	return startProcess(ctx, spec)
}

func startProcess(_ context.Context, cfg Spec) (*Process, error) {
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
	p := &Process{pid: cmd.Process.Pid, os: cmd.Process, grace: cfg.Grace, stdin: inW, w: newPipeWriter(inW), stdout: &exitReader{f: outR, eof: func() { exitedEarly(cmd.Process.Pid) }},
		exited: make(chan struct{}), tail: &Tail{}, onExit: cfg.OnExit, onGone: cfg.OnGone}
	errCopy := startStderr(errR, &stderrSink{tail: p.tail, out: cfg.Stderr})
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

// checkDir reports a working directory that cannot be entered as the
// "chdir" *fs.PathError os.StartProcess reports without SysProcAttr: with
// one (the process group), a missing directory looks like a missing
// program.
func checkDir(dir string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &fs.PathError{Op: "chdir", Path: dir, Err: err}
	case !fi.IsDir():
		return &fs.PathError{Op: "chdir", Path: dir, Err: syscall.ENOTDIR}
	}
	return nil
}
