//go:build !unix

package proc

import (
	"os/exec"
	"time"
)

// terminateStep is a step of shutting a server down after its stdin closed.
type terminateStep int

const (
	stepTerm terminateStep = iota // nothing to ask: there are no signals
	stepKill                      // kill the process
)

// ownGroup does nothing: process groups are a Unix facility (a Windows job
// object would be the counterpart).
func ownGroup(*exec.Cmd) {}

// signal kills the process itself at the kill step.
func (p *Process) signal(step terminateStep) {
	if step == stepKill {
		_ = p.os.Kill()
	}
}

// keepOpenUntilReaped: a read of a pipe that is not pollable can only be
// ended by closing it.
const keepOpenUntilReaped = false

// drain reads on: without pollable pipes a read cannot be made not to
// wait, so a descendant holding the pipe delays the end of the session.
func (r *exitReader) drain(b []byte) (int, error) {
	_ = r.f.SetReadDeadline(time.Time{})
	return r.f.Read(b)
}
