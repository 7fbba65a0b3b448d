package conn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioConn is the SDK connection to one server process. Reads go through
// the SDK's newline-delimited reader; writes go through a writer of ours,
// because the SDK's holds a mutex across a blocking pipe write and ignores
// the context: a server that stops reading its stdin would then block
// every later write, cancellation notices included, for ever.
type stdioConn struct {
	mcp.Connection // the SDK's connection, used for Read and Close
	p              *process
	w              *pipeWriter
}

// Write sends msg as one line, or returns ctx's error when ctx ends first.
// A line handed to the pipe is written whole, even after ctx ended, so the
// stream never carries half a message.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %w", err)
	}
	return c.w.write(ctx, append(data, '\n'))
}

// Close closes both pipes and starts terminating the process; it does not
// wait for the process: [Terminator] is the barrier.
func (c *stdioConn) Close() error {
	c.p.end.fire(false)
	err := c.Connection.Close()
	c.w.close()
	c.p.terminate(c.p.grace)
	return err
}

// pipeWriter writes to the server's stdin on a goroutine of its own, one
// line at a time, so that a writer can give up when its context ends
// instead of waiting for a server that no longer reads.
type pipeWriter struct {
	f         io.Writer
	reqs      chan writeReq
	done      chan struct{}
	closeOnce sync.Once
}

type writeReq struct {
	data []byte
	res  chan error // buffered: the goroutine never waits for a writer that left
}

func newPipeWriter(f io.Writer) *pipeWriter {
	w := &pipeWriter{f: f, reqs: make(chan writeReq), done: make(chan struct{})}
	go w.run()
	return w
}

// run ends once close was called and the write in progress, if any,
// returned (closing the pipe ends a blocked write).
func (w *pipeWriter) run() {
	for {
		select {
		case r := <-w.reqs:
			_, err := w.f.Write(r.data)
			r.res <- err
		case <-w.done:
			return
		}
	}
}

func (w *pipeWriter) write(ctx context.Context, data []byte) error {
	r := writeReq{data: data, res: make(chan error, 1)}
	select {
	case w.reqs <- r:
	case <-ctx.Done():
		return ctx.Err()
	case <-w.done:
		return fmt.Errorf("write to server stdin: %w", os.ErrClosed)
	}
	select {
	case err := <-r.res:
		return err
	case <-ctx.Done():
		// The line is still written if the server reads again; the
		// caller has stopped waiting for it.
		return ctx.Err()
	}
}

func (w *pipeWriter) close() { w.closeOnce.Do(func() { close(w.done) }) }

// exitReader reads a pipe from the server until the pipe's writers are all
// gone, or, once the server process itself has exited, until the pipe is
// empty: everything the process wrote is in the pipe when it is reaped,
// and a descendant that holds the write end (one that left the process
// group) must not hide the server's death.
type exitReader struct {
	f      *os.File
	exited atomic.Bool
}

func (r *exitReader) Read(b []byte) (int, error) {
	for {
		if r.exited.Load() {
			n, err := r.drain(b)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				continue // leaderExited's wake-up came after drain cleared it
			}
			return n, err
		}
		n, err := r.f.Read(b)
		if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) && r.exited.Load() {
			continue
		}
		return n, err
	}
}

// leaderExited switches to draining and wakes a read that waits for data.
func (r *exitReader) leaderExited() {
	r.exited.Store(true)
	_ = r.f.SetReadDeadline(time.Now())
}

func (r *exitReader) Close() error { return r.f.Close() }
