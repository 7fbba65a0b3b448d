//go:build linux

package proc

import (
	"bytes"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// stderrChunk is how much of a standard error pipe the reaper reads at once.
const stderrChunk = 4096

// startStderr copies the read end of a server's stderr pipe into sink:
// from the reaper's goroutine, with no goroutine of its own while the
// server is quiet, or else from a goroutine of its own.
func startStderr(f *os.File, sink *stderrSink) stderrCopy {
	done := make(chan struct{})
	if w := reap.watchStderr(f, sink, done); w != nil {
		return w
	}
	return copyStderr(f, sink, done)
}

// stderrWatch is a standard error pipe served by the reaper: a one-shot
// watch, armed again once a chunk read from it is handled. With no
// writer configured, a chunk goes to the tail on the reaper's goroutine;
// with one, a goroutine hands it over and only then arms the watch again,
// so that a slow writer holds back that server (as a full pipe would)
// and never the reaper.
type stderrWatch struct {
	r    *reaper
	fd   int // our read end, non-blocking; closed when the copy ends
	key  uint64
	sink *stderrSink
	done chan struct{}

	// Guarded by r.mu.
	writing  bool             // a chunk is with the writer: the watch is disarmed
	exited   bool             // leaderExited was called
	over     bool             // the watch ended: the descriptor is closed or being drained
	broken   bool             // the set broke while a chunk was with the writer
	fallback *stderrGoroutine // the goroutine that copies since the set broke
}

// watchStderr takes over f's descriptor (a duplicate, sharing its
// non-blocking mode; f is closed) and watches it, or returns nil with f
// untouched.
func (r *reaper) watchStderr(f *os.File, sink *stderrSink, done chan struct{}) *stderrWatch {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	fd, derr := -1, error(nil)
	// Never f.Fd(): it would make the shared description blocking.
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil || derr != nil {
		return nil
	}
	w := &stderrWatch{r: r, fd: fd, sink: sink, done: done}
	if !r.add(fd, unix.EPOLLIN|unix.EPOLLONESHOT, w, &w.key) {
		_ = unix.Close(fd)
		return nil
	}
	_ = f.Close()
	return w
}

func (w *stderrWatch) copied() <-chan struct{} { return w.done }

// readNB reads what fd holds without waiting: (0, EAGAIN) when empty,
// (0, nil) at the end of the pipe.
func readNB(fd int, b []byte) (int, error) {
	for {
		n, err := unix.Read(fd, b)
		if err != unix.EINTR {
			return max(n, 0), err
		}
	}
}

func (w *stderrWatch) ready(r *reaper, key uint64, buf []byte) {
	n, err := readNB(w.fd, buf)
	switch {
	case n > 0:
		w.sink.keep(buf[:n])
		if w.sink.out != nil {
			w.writing = true
			go w.deliver(bytes.Clone(buf[:n]))
			return
		}
	case err == unix.EAGAIN:
	default:
		// The end of the pipe: every writer is gone (or it failed).
		r.removeLocked(key, w.fd)
		w.over = true
		_ = unix.Close(w.fd)
		close(w.done)
		return
	}
	if !r.rearmLocked(key, w.fd) {
		r.removeLocked(key, w.fd)
		w.fallBackLocked()
	}
}

// deliver hands a chunk to the configured writer, then lets the copy go on.
func (w *stderrWatch) deliver(chunk []byte) {
	w.sink.toOut(chunk)
	r := w.r
	r.mu.Lock()
	w.writing = false
	switch {
	case w.broken:
		w.fallBackLocked()
	case w.exited:
		r.removeLocked(w.key, w.fd)
		w.over = true
		r.mu.Unlock()
		w.drain()
		return
	case !r.rearmLocked(w.key, w.fd):
		r.removeLocked(w.key, w.fd)
		w.fallBackLocked()
	}
	r.mu.Unlock()
}

func (w *stderrWatch) abandon() {
	if w.writing {
		w.broken = true // deliver falls back once the writer returns
		return
	}
	w.fallBackLocked()
}

// fallBackLocked hands the descriptor, no longer watched, to a goroutine.
func (w *stderrWatch) fallBackLocked() {
	w.over = true
	w.fallback = copyStderr(os.NewFile(uintptr(w.fd), "|0"), w.sink, w.done)
	if w.exited {
		w.fallback.leaderExited()
	}
}

func (w *stderrWatch) leaderExited() {
	r := w.r
	r.mu.Lock()
	if w.exited {
		r.mu.Unlock()
		return
	}
	w.exited = true
	switch {
	case w.fallback != nil:
		w.fallback.leaderExited()
		r.mu.Unlock()
		return
	case w.over || w.writing:
		r.mu.Unlock() // ended already, or deliver drains next
		return
	}
	r.removeLocked(w.key, w.fd)
	w.over = true
	r.mu.Unlock()
	if w.sink.out == nil {
		// Nothing can block: drain here, so that the exit's report does
		// not wait for another goroutine to be scheduled.
		w.drain()
		return
	}
	go w.drain()
}

// drain reads what the pipe holds into the sink, for at most stderrDrain
// (a descendant that left the group may keep writing), then closes it.
func (w *stderrWatch) drain() {
	defer close(w.done)
	defer unix.Close(w.fd)
	buf := make([]byte, stderrChunk)
	deadline := time.Now().Add(stderrDrain)
	for time.Now().Before(deadline) {
		n, _ := readNB(w.fd, buf)
		if n == 0 {
			return // empty, or the end of the pipe
		}
		_, _ = w.sink.Write(buf[:n])
	}
}
