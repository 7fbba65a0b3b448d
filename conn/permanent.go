package conn

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os/exec"
	"syscall"

	"github.com/mcpfsm/mcpfsm/sandbox"
)

// ErrPermanent is matched by the error of an attempt that failed in a way
// no wait can fix: the server's command is missing or not executable, its
// working directory is missing, or its URL's host does not resolve. The
// cause is a [*PermanentError], which names the fix. So is a sandbox
// (Stdio.Sandbox) this system cannot give. The supervisor
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
// *net.DNSError, or a *sandbox.UnavailableError).
type PermanentError struct {
	Fix string // what the operator must do: one of the Fix constants, or a sandbox.UnavailableError's Fix
	Err error  // the system's error
}

// Error reads "<cause> (<fix>)".
func (e *PermanentError) Error() string { return fmt.Sprintf("%v (%s)", e.Err, e.Fix) }

// Is reports ErrPermanent.
func (e *PermanentError) Is(target error) bool { return target == ErrPermanent }

// Unwrap returns the system's error.
func (e *PermanentError) Unwrap() error { return e.Err }

// fixFor names the fix for a failure no wait can fix, or returns "". The
// system's errors are matched where they arise, so an unrelated "no such
// file" deeper in a transport's error is not mistaken for a missing
// command.
func fixFor(err error) string {
	var pe *fs.PathError
	var ee *exec.Error
	var dns *net.DNSError
	var sb *sandbox.UnavailableError
	switch {
	case errors.As(err, &sb):
		return sb.Fix
	case errors.Is(err, exec.ErrNotFound):
		return FixCommand
	case errors.As(err, &dns) && dns.IsNotFound:
		return FixHost
	case errors.As(err, &pe) && pe.Op == "chdir":
		return FixWorkDir
	case errors.As(err, &pe) && pe.Op == "fork/exec", errors.As(err, &ee):
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// The program, or the interpreter its #! line names, is missing.
			return FixCommand
		case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOEXEC):
			return FixExecutable
		}
	}
	return ""
}

// markPermanent wraps an attempt's failure no wait can fix in a
// *PermanentError naming the fix.
func markPermanent(err error) error {
	if err == nil || errors.Is(err, ErrPermanent) {
		return err
	}
	if fix := fixFor(err); fix != "" {
		return &PermanentError{Fix: fix, Err: err}
	}
	return err
}
