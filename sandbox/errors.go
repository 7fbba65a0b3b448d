package sandbox

import "fmt"

// UnavailableError reports that this system cannot give what a [Spec]
// asks: the program is not started, never started unsandboxed. Feature
// names what is missing, Fix what the operator can do about it.
type UnavailableError struct {
	Feature string // such as "unprivileged user namespaces"
	Reason  string // what the system said
	Fix     string // such as "sysctl -w kernel.unprivileged_userns_clone=1"
}

// PermanentFix returns Fix: no retry can make the sandbox available, and
// Fix names what can. It is how package conn tells a permanent failure
// of a launcher.
func (e *UnavailableError) PermanentFix() string { return e.Fix }

// Error reads "sandbox unavailable: <feature>: <reason>"; the fix is in
// Fix (conn wraps the error of [Spec.Launch] in a conn.PermanentError,
// which adds the fix in brackets).
func (e *UnavailableError) Error() string {
	return fmt.Sprintf("sandbox unavailable: %s: %s", e.Feature, e.Reason)
}

func unavailable(feature, fix, format string, a ...any) *UnavailableError {
	return &UnavailableError{Feature: feature, Reason: fmt.Sprintf(format, a...), Fix: fix}
}
