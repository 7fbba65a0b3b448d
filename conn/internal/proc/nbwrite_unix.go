//go:build unix

package proc

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// nbWriter makes one non-blocking write to a pipe in the runtime's poller,
// through its raw connection: the callback returns true, so the runtime
// never parks the caller. Its callback and the fields it fills are made
// once, so that a write allocates nothing. Not safe for concurrent use.
type nbWriter struct {
	rc   syscall.RawConn // nil: always wait (the file has no raw connection)
	fn   func(fd uintptr) bool
	data []byte
	n    int
	err  error
}

func (w *nbWriter) init(f *os.File) {
	// Never f.Fd(): it would make the file blocking.
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	// A write must not block the caller: only a non-blocking pipe (as
	// os.Pipe's ends are, in the runtime's poller) is written directly.
	flags, ferr := 0, error(nil)
	if err := rc.Control(func(fd uintptr) { flags, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0) }); err != nil || ferr != nil || flags&unix.O_NONBLOCK == 0 {
		return
	}
	w.rc = rc
	w.fn = w.try
}

func (w *nbWriter) try(fd uintptr) bool {
	for {
		w.n, w.err = unix.Write(int(fd), w.data)
		if w.err != unix.EINTR {
			return true
		}
	}
}

// write writes what the pipe takes of data at once: n < len(data) with a
// nil error means the pipe is full and the rest must wait.
func (w *nbWriter) write(data []byte) (int, error) {
	if w.rc == nil {
		return 0, nil
	}
	w.data = data
	rerr := w.rc.Write(w.fn)
	n, err := w.n, w.err
	w.data, w.n, w.err = nil, 0, nil
	switch {
	case rerr != nil:
		// The only failure before the callback: the file is closed.
		return 0, os.ErrClosed
	case err == unix.EAGAIN:
		return 0, nil
	case err != nil:
		return 0, err
	}
	return max(n, 0), nil
}
