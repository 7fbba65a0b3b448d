package conn

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os/exec"
	"syscall"
)

// ErrPermanent is matched by the error of an attempt that failed in a way
// no wait can fix: the server's command is missing or not executable, its
// working directory is missing, or its URL's host does not resolve. The
// cause is a [*PermanentError], which names the fix. The supervisor
// retries such a failure once, to confirm it, and then stops in
// [FailedPermanent] instead of spending its backoff.
var ErrPermanent = errors.New("no retry can fix it")

// Fixes named by a [*PermanentError].
const (
	FixCommand    = "install the command or fix its path"
	FixExecutable = "make the command an executable program or fix its path"
	FixWorkDir    = "create the working directory or fix its path"
	FixHost       = "check the URL's host"
)

// PermanentError is the cause of an attempt that failed in a way no wait
// can fix. It matches errors.Is(err, ErrPermanent) and unwraps to the
// error the system reported (an *exec.Error, *fs.PathError or
// *net.DNSError).
type PermanentError struct {
	Fix string // what the operator must do, one of the Fix constants
	Err error  // the system's error
}

// Error reads "<cause> (<fix>)".
func (e *PermanentError) Error() string { return fmt.Sprintf("%v (%s)", e.Err, e.Fix) }

// Is reports ErrPermanent.
func (e *PermanentError) Is(target error) bool { return target == ErrPermanent }

// Unwrap returns the system's error.
func (e *PermanentError) Unwrap() error { return e.Err }

// startFailed words a stdio server that could not be started, marking the
// failures no wait can fix.
func startFailed(path string, err error) error {
	err = fmt.Errorf("start %s: %w", path, err)
	if fix := startFix(err); fix != "" {
		return &PermanentError{Fix: fix, Err: err}
	}
	return err
}

// startFix names the fix for a process start failure no wait can fix, or
// returns "".
func startFix(err error) string {
	var pe *fs.PathError
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return FixCommand
	case errors.As(err, &pe) && pe.Op == "chdir":
		return FixWorkDir
	case errors.Is(err, fs.ErrNotExist):
		// The program, or the interpreter its #! line names, is missing.
		return FixCommand
	case errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOEXEC):
		return FixExecutable
	}
	return ""
}

// markPermanent marks an attempt's failure no wait can fix, if err is one that
// startFailed did not already mark: a host name the resolver says does not
// exist.
func markPermanent(err error) error {
	var dns *net.DNSError
	if err == nil || errors.Is(err, ErrPermanent) || !errors.As(err, &dns) || !dns.IsNotFound {
		return err
	}
	return &PermanentError{Fix: FixHost, Err: err}
}
