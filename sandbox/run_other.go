//go:build !linux

package sandbox

import (
	"context"
	"os/exec"
	"runtime"
)

// Run is one sandboxed start of a command; outside Linux there is none.
type Run struct {
	spec Spec
	oom  *oomWatch
}

// Init returns at once: there is no launcher outside Linux.
func Init() {}

// errUnsupported is what every sandbox is outside Linux.
func errUnsupported() error {
	return unavailable("a sandbox on "+runtime.GOOS,
		`run the server without "sandboxEnabled" here, or on Linux; macOS support (sandbox-exec) is planned`,
		"mcpfsm enforces sandboxes on Linux only")
}

// Prepare reports an [*UnavailableError]: mcpfsm enforces sandboxes on
// Linux only.
func (s *Spec) Prepare(*exec.Cmd, Options) (*Run, error) { return nil, errUnsupported() }

// Start is never reached outside Linux: Prepare fails.
func (r *Run) Start(context.Context) error { return errUnsupported() }

// cgroupOOM is false: there is no cgroup outside Linux.
func (r *Run) cgroupOOM() bool { return false }

// Close does nothing outside Linux.
func (r *Run) Close() {}

// Check reports an [*UnavailableError]: mcpfsm enforces sandboxes on Linux
// only.
func (s *Spec) Check() error {
	if err := s.Validate(); err != nil {
		return err
	}
	return errUnsupported()
}

// memoryBound says what memoryMB bounds: outside Linux, nothing runs.
func memoryBound() string { return "private memory only: shared memory and memfd are not bounded" }
