//go:build unix

package conn

import (
	"os/exec"
	"syscall"
)

// terminateStep is a step of shutting a server down after its stdin closed.
type terminateStep int

const (
	stepTerm terminateStep = iota // ask the group to stop
	stepKill                      // kill the group
)

// ownGroup starts the command in a process group of its own, so that
// everything it starts can be signalled with it.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// signal sends the step's signal to the process's whole group.
func (p *process) signal(step terminateStep) {
	sig := syscall.SIGTERM
	if step == stepKill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-p.pid, sig)
}
