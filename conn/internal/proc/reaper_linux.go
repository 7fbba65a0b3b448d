//go:build linux

package proc

import (
	"errors"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// exitWatch arranges for exited to be called, on a goroutine that must not
// block, once the process with pid has exited (it is not reaped). It
// reports false where pidfds are not available (a kernel before 5.3, or a
// sandbox that forbids them); the caller then waits in cmd.Wait.
//
// Every watched process has a pidfd in the reaper's epoll set. The caller
// must be the process's only reaper until exited is called, so that its
// PID cannot be reused meanwhile.
func exitWatch(pid int, exited func()) bool {
	pfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false
	}
	w := &pidWatch{fd: pfd, pid: pid, exited: exited}
	var key uint64
	if !reap.addPid(pfd, w, &key) {
		_ = unix.Close(pfd)
		return false
	}
	return true
}

// exitedEarly is told that the process with pid, watched by exitWatch, may
// have exited: its stdout reached the end. If it has (a check that does
// not block and does not reap), its exit is reported at once rather than
// when the reaper's goroutine next wakes for its pidfd, which comes a
// little later (the kernel closes a dying process's descriptors before it
// signals its pidfd, and the wake-up goes through the runtime's poller).
func exitedEarly(pid int) {
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); err != nil || info.Signo == 0 {
		return // still running (a server that closed its stdout), or not ours to ask
	}
	reap.mu.Lock()
	defer reap.mu.Unlock()
	key, ok := reap.pids[pid]
	if !ok {
		return // reported already
	}
	if w, ok := reap.watched[key]; ok {
		w.ready(&reap, key, nil)
	}
}

// fdWatch is a descriptor in the reaper's epoll set.
type fdWatch interface {
	// ready runs on the reaper goroutine, with the reaper's mu held, when
	// the descriptor is ready; it must not block. buf is scratch space
	// that the goroutine owns.
	ready(r *reaper, key uint64, buf []byte)
	// abandon runs with mu held when the set broke: the descriptor is no
	// longer watched, and must be served some other way.
	abandon()
}

// pidWatch is a process's pidfd: readable once the process exited.
type pidWatch struct {
	fd     int
	pid    int
	exited func()
}

func (w *pidWatch) ready(r *reaper, key uint64, _ []byte) {
	r.removeLocked(key, w.fd)
	delete(r.pids, w.pid)
	_ = unix.Close(w.fd)
	w.exited()
}

// abandon hands the process to exited, which reaps it in cmd.Wait.
func (w *pidWatch) abandon() {
	delete(reap.pids, w.pid)
	_ = unix.Close(w.fd)
	w.exited()
}

// reaper is one epoll set, itself registered with the runtime's poller, and
// the goroutine that serves it: parked there while any descriptor is
// watched (process exits, standard error pipes) and gone when none is, so
// that no OS thread and no goroutine per server is held.
//
// Each watch has a key of its own in its epoll events, never reused, so
// that an event fetched for a watch that was removed meanwhile (from
// another goroutine) is not taken for a later watch of the same
// descriptor number.
type reaper struct {
	mu      sync.Mutex
	epfd    int      // -1 while no goroutine runs
	file    *os.File // the set in the runtime's poller: a past read deadline wakes the goroutine
	last    uint64   // the key of the latest watch
	ev      unix.EpollEvent
	watched map[uint64]fdWatch
	pids    map[int]uint64 // the key of each watched process's pidfd
}

var reap = reaper{epfd: -1, watched: map[uint64]fdWatch{}, pids: map[int]uint64{}}

// addPid is add for a process's pidfd, findable by its pid.
func (r *reaper) addPid(pfd int, w *pidWatch, key *uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.addLocked(pfd, unix.EPOLLIN, w, key) {
		return false
	}
	r.pids[w.pid] = *key
	return true
}

// add watches fd for events, with key (if not nil) set to its key.
func (r *reaper) add(fd int, events uint32, w fdWatch, key *uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.addLocked(fd, events, w, key)
}

func (r *reaper) addLocked(fd int, events uint32, w fdWatch, key *uint64) bool {
	if r.epfd < 0 && !r.startLocked() {
		return false
	}
	r.last++
	if !r.ctlLocked(unix.EPOLL_CTL_ADD, fd, events, r.last) {
		if len(r.watched) == 0 {
			r.wakeLocked() // started for nothing: let the goroutine go
		}
		return false
	}
	r.watched[r.last] = w
	if key != nil {
		*key = r.last
	}
	return true
}

func (r *reaper) ctlLocked(op, fd int, events uint32, key uint64) bool {
	r.ev = unix.EpollEvent{Events: events, Fd: int32(uint32(key)), Pad: int32(uint32(key >> 32))}
	return unix.EpollCtl(r.epfd, op, fd, &r.ev) == nil
}

// rearmLocked enables a one-shot watch again.
func (r *reaper) rearmLocked(key uint64, fd int) bool {
	return r.ctlLocked(unix.EPOLL_CTL_MOD, fd, unix.EPOLLIN|unix.EPOLLONESHOT, key)
}

// removeLocked ends a watch; the goroutine goes if it was the last.
func (r *reaper) removeLocked(key uint64, fd int) {
	if _, ok := r.watched[key]; !ok {
		return
	}
	delete(r.watched, key)
	_ = unix.EpollCtl(r.epfd, unix.EPOLL_CTL_DEL, fd, nil)
	if len(r.watched) == 0 {
		r.wakeLocked()
	}
}

// aLongTimeAgo is a read deadline that has passed.
var aLongTimeAgo = time.Unix(1, 0)

// wakeLocked makes the goroutine's wait return, so that it sees the set
// emptied.
func (r *reaper) wakeLocked() { _ = r.file.SetReadDeadline(aLongTimeAgo) }

// startLocked creates the epoll set and starts its goroutine.
func (r *reaper) startLocked() bool {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return false
	}
	// Non-blocking, the descriptor goes to the runtime's poller: it is
	// readable while any descriptor in the set is ready.
	if err := unix.SetNonblock(epfd, true); err != nil {
		_ = unix.Close(epfd)
		return false
	}
	f := os.NewFile(uintptr(epfd), "reaper-epoll")
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return false
	}
	r.epfd, r.file = epfd, f
	go r.run(f, rc)
	return true
}

// eventKey is the key add put in an event.
func eventKey(ev *unix.EpollEvent) uint64 {
	return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
}

// run serves the set until nothing is watched.
func (r *reaper) run(f *os.File, rc syscall.RawConn) {
	defer f.Close()
	events := make([]unix.EpollEvent, 64)
	buf := make([]byte, stderrChunk)
	n := 0
	var werr error
	// Read calls the check first, and while it reports nothing ready
	// parks this goroutine in the poller until the set is readable. Made
	// once: a closure made in the loop would cost allocations per wait.
	check := func(fd uintptr) bool {
		n, werr = unix.EpollWait(int(fd), events, 0)
		if werr == unix.EINTR {
			n, werr = 0, nil
		}
		return n > 0 || werr != nil
	}
	for {
		r.mu.Lock()
		if len(r.watched) == 0 {
			r.epfd, r.file = -1, nil
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		n, werr = 0, nil
		err := rc.Read(check)
		if err == nil {
			err = werr
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// A wake-up: the set may be empty now. Clear it before
			// looking, so that a later wake-up is not lost.
			if err = f.SetReadDeadline(time.Time{}); err == nil {
				continue
			}
		}
		r.mu.Lock()
		if err != nil {
			// The set broke and cannot be waited on any more: every
			// descriptor is served another way.
			for _, w := range r.watched {
				w.abandon()
			}
			clear(r.watched)
			r.epfd, r.file = -1, nil
			r.mu.Unlock()
			return
		}
		for i := range events[:max(n, 0)] {
			key := eventKey(&events[i])
			if w, ok := r.watched[key]; ok {
				w.ready(r, key, buf)
			}
		}
		r.mu.Unlock()
	}
}
