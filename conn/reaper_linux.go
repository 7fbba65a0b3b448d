//go:build linux

package conn

import (
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// exitWatch arranges for exited to be called, on a goroutine that must not
// block, once the process with pid has exited (it is not reaped). It
// reports false where pidfds are not available (a kernel before 5.3, or a
// sandbox that forbids them); the caller then waits in cmd.Wait.
//
// Every watched process has a pidfd in one epoll set, which is itself
// registered with the runtime's poller: one goroutine, parked there while
// any process is watched and gone when none is, waits for all of them, and
// no OS thread is held. The caller must be the process's only reaper until
// exited is called, so that its PID cannot be reused meanwhile.
func exitWatch(pid int, exited func()) bool {
	pfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false
	}
	if !reap.add(pfd, exited) {
		_ = unix.Close(pfd)
		return false
	}
	return true
}

// reaper is the epoll set of the watched pidfds and its goroutine.
type reaper struct {
	mu      sync.Mutex
	epfd    int // -1 while no goroutine runs
	watched map[int32]func()
}

var reap = reaper{epfd: -1, watched: map[int32]func(){}}

func (r *reaper) add(pfd int, exited func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.epfd < 0 && !r.startLocked() {
		return false
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(pfd)}
	if err := unix.EpollCtl(r.epfd, unix.EPOLL_CTL_ADD, pfd, &ev); err != nil {
		return false
	}
	r.watched[int32(pfd)] = exited
	return true
}

// startLocked creates the epoll set and starts its goroutine.
func (r *reaper) startLocked() bool {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return false
	}
	// Non-blocking, the descriptor goes to the runtime's poller: it is
	// readable while any pidfd in the set is.
	if err := unix.SetNonblock(epfd, true); err != nil {
		_ = unix.Close(epfd)
		return false
	}
	f := os.NewFile(uintptr(epfd), "pidfd-epoll")
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return false
	}
	r.epfd = epfd
	go r.run(f, rc)
	return true
}

// run waits for exits until no process is watched.
func (r *reaper) run(f *os.File, rc syscall.RawConn) {
	defer f.Close()
	events := make([]unix.EpollEvent, 64)
	for {
		n := 0
		// Read calls the check first, and while it reports nothing ready
		// parks this goroutine in the poller until the set is readable.
		err := rc.Read(func(fd uintptr) bool {
			var err error
			n, err = unix.EpollWait(int(fd), events, 0)
			if err == unix.EINTR {
				n, err = 0, nil
			}
			return n > 0 || err != nil
		})
		r.mu.Lock()
		for _, ev := range events[:max(n, 0)] {
			if exited, ok := r.watched[ev.Fd]; ok {
				delete(r.watched, ev.Fd)
				_ = unix.EpollCtl(r.epfd, unix.EPOLL_CTL_DEL, int(ev.Fd), nil)
				_ = unix.Close(int(ev.Fd))
				exited()
			}
		}
		if err != nil || len(r.watched) == 0 {
			// Nothing left to watch (or the set broke, which cannot be
			// waited on any more: its processes are handed to their
			// exited functions, which reap them in cmd.Wait).
			for fd, exited := range r.watched {
				_ = unix.Close(int(fd))
				exited()
			}
			clear(r.watched)
			r.epfd = -1
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
	}
}
