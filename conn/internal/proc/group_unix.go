//go:build unix

package proc

import (
	"io"
	"os/exec"
	"syscall"
	"time"
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
func (p *Process) signal(step terminateStep) {
	sig := syscall.SIGTERM
	if step == stepKill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-p.pid, sig)
}

// keepOpenUntilReaped: the pipes are in the runtime's poller, so a read can
// be woken without closing the pipe.
const keepOpenUntilReaped = true

// drain reads what the pipe holds without waiting for more: io.EOF once it
// is empty.
func (r *exitReader) drain(b []byte) (int, error) {
	if err := r.f.SetReadDeadline(time.Time{}); err != nil {
		return 0, err
	}
	rc, err := r.f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var rerr error
	if err := rc.Read(func(fd uintptr) bool {
		for {
			n, rerr = syscall.Read(int(fd), b)
			if rerr != syscall.EINTR {
				return true // done, even on EAGAIN: never wait for a survivor
			}
		}
	}); err != nil {
		return 0, err
	}
	switch {
	case rerr == syscall.EAGAIN || rerr == nil && n == 0:
		return 0, io.EOF
	case rerr != nil:
		return 0, rerr
	}
	return n, nil
}
