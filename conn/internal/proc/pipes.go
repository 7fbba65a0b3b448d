package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// pipeWriter writes lines to the server's stdin from the caller's
// goroutine without ever blocking it for longer than its context: a line
// the pipe takes at once is written there and then; the rest of a line the
// pipe cannot take (the server is slow, or stopped reading) is finished by
// a goroutine parked in the runtime's poller, while the caller waits for it
// or for its context. One line is in progress at a time, so lines never
// interleave; the next writer waits on a semaphore, never on a mutex a
// stuck write could hold for ever.
type pipeWriter struct {
	f         *os.File
	sem       chan struct{} // held while a line is being written, to its end
	done      chan struct{} // closed by close
	closeOnce sync.Once
	nb        nbWriter // the non-blocking attempt; used only with sem held
}

// errStdinClosed is the error of a write after the connection closed.
var errStdinClosed = fmt.Errorf("write to server stdin: %w", os.ErrClosed)

func newPipeWriter(f *os.File) *pipeWriter {
	w := &pipeWriter{f: f, sem: make(chan struct{}, 1), done: make(chan struct{})}
	w.nb.init(f)
	return w
}

// write writes data, one whole line, or returns ctx's error when ctx ends
// first; the line is then still written whole, in the background, unless
// the pipe closes. The fast path (the pipe takes the line at once)
// allocates nothing and starts no goroutine.
func (w *pipeWriter) write(ctx context.Context, data []byte) error {
	// As the SDK's own writer: no write on an ended context. (Err, not
	// Done, which would make a cancelable context's channel.)
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case w.sem <- struct{}{}:
	default:
		select {
		case w.sem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		case <-w.done:
			return errStdinClosed
		}
	}
	select {
	case <-w.done:
		<-w.sem
		return errStdinClosed
	default:
	}
	n, err := w.nb.write(data)
	if err != nil || n == len(data) {
		<-w.sem
		if err != nil {
			return &os.PathError{Op: "write", Path: w.f.Name(), Err: err}
		}
		return nil
	}
	// The pipe is full: the rest waits for the server to read, on a
	// goroutine that holds the semaphore until the line is complete (or
	// the pipe closed), whether or not the caller still waits.
	res := make(chan error, 1)
	go func() {
		_, err := w.f.Write(data[n:])
		<-w.sem
		res <- err
	}()
	select {
	case err := <-res:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close makes later writes fail; closing the pipe itself (the process's
// terminate does) ends a write in progress.
func (w *pipeWriter) close() { w.closeOnce.Do(func() { close(w.done) }) }

// exitReader reads a pipe from the server until the pipe's writers are all
// gone, or, once the server process itself has exited, until the pipe is
// empty: everything the process wrote is in the pipe when it is reaped,
// and a descendant that holds the write end (one that left the process
// group) must not hide the server's death.
//
// Where reads can be woken (keepOpenUntilReaped), Close ends reading but
// the pipe stays open until the process is reaped too: a server that
// writes to stdout while it shuts down (a late reply, a notification)
// would otherwise die of SIGPIPE instead of the shutdown it was given.
type exitReader struct {
	f      *os.File
	exited atomic.Bool
	closed atomic.Bool
	ends   atomic.Int32 // of Close and processGone: the second closes f
	eof    func()       // told of the end of the pipe, if set
}

func (r *exitReader) Read(b []byte) (int, error) {
	for {
		if r.closed.Load() {
			return 0, os.ErrClosed
		}
		if r.exited.Load() {
			n, err := r.drain(b)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				continue // a wake-up came after drain cleared it
			}
			return n, err
		}
		n, err := r.f.Read(b)
		if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) && (r.exited.Load() || r.closed.Load()) {
			continue
		}
		if err == io.EOF && r.eof != nil {
			r.eof()
		}
		return n, err
	}
}

// leaderExited switches to draining and wakes a read that waits for data.
func (r *exitReader) leaderExited() {
	r.exited.Store(true)
	_ = r.f.SetReadDeadline(time.Now())
}

// Close makes reads fail, waking one in progress, and closes the pipe
// once the process is gone.
func (r *exitReader) Close() error {
	if !keepOpenUntilReaped {
		return r.f.Close()
	}
	if r.closed.Swap(true) {
		return nil
	}
	_ = r.f.SetReadDeadline(time.Now())
	return r.end()
}

// processGone is called once the process was reaped.
func (r *exitReader) processGone() {
	if keepOpenUntilReaped {
		_ = r.end()
	}
}

func (r *exitReader) end() error {
	if r.ends.Add(1) == 2 {
		return r.f.Close()
	}
	return nil
}
