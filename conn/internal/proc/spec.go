package proc

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
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
	// Launch, if set, starts the command in place of cmd.Start (a sandbox
	// does); the command is still waited for with cmd.Wait. Logger is
	// handed to it for what the launcher reports, such as a connection
	// its sandbox refused.
	Launch func(ctx context.Context, cmd *exec.Cmd, logger *slog.Logger) (Launched, error)
	Logger *slog.Logger
}

// Launched is a command that a Spec's Launch started.
type Launched interface {
	// StderrWatch returns a writer that also gets the process's standard
	// error, or nil.
	StderrWatch() io.Writer
	// Limit names the limit the process, which ended as st says, ran
	// into; "" when none is known.
	Limit(st *os.ProcessState) string
	// Close releases what the launch holds once the process is reaped.
	Close()
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
	// Limit names the sandbox limit the process ran into, such as "out
	// of memory under the sandbox's memoryMB 256"; empty when none is
	// known, and when the shutdown ended it.
	Limit string
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

// exitOf describes a reaped process; sent is the signal the shutdown
// sent it last, if any.
func exitOf(st *os.ProcessState, sent string) Exit {
	e := Exit{Code: st.ExitCode()}
	if sig := exitSignal(st); sig != "" {
		e.Code, e.Signal, e.BySupervisor = -1, sig, sig == sent
	}
	return e
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
