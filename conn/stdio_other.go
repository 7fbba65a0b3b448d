//go:build !unix

package conn

import "os/exec"

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
func (p *process) signal(step terminateStep) {
	if step == stepKill {
		_ = p.os.Kill()
	}
}
