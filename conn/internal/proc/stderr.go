package proc

import (
	"io"
	"os"
)

// stderrSink is where a server's standard error goes: the tail kept for
// the exit report, and the configured writer, if any, until that fails (the
// server then still writes to a pipe that is read: a failing writer does
// not kill it with SIGPIPE).
type stderrSink struct {
	tail  *Tail
	out   io.Writer // Spec.Stderr; nil once it failed
	watch io.Writer // the sandbox's, which reads it for a failed allocation; may be nil
}

func (s *stderrSink) Write(b []byte) (int, error) {
	s.keep(b)
	s.toOut(b)
	return len(b), nil
}

// keep writes b to the tail and the watch, neither of which blocks.
func (s *stderrSink) keep(b []byte) {
	_, _ = s.tail.Write(b)
	if s.watch != nil {
		_, _ = s.watch.Write(b)
	}
}

// toOut writes b to the configured writer, dropping it on its first error.
func (s *stderrSink) toOut(b []byte) {
	if s.out == nil {
		return
	}
	if _, err := s.out.Write(b); err != nil {
		s.out = nil
	}
}

// stderrCopy copies the read end of a server's stderr pipe into its sink.
type stderrCopy interface {
	// leaderExited makes the copy drain what the pipe holds and stop,
	// even if a process that left the group still holds the write end.
	leaderExited()
	// copied is closed once the copy stopped and the pipe is closed.
	copied() <-chan struct{}
}

// stderrGoroutine is the copy done by a goroutine of its own, where the
// shared reaper cannot serve the pipe.
type stderrGoroutine struct {
	r    *exitReader
	done chan struct{}
}

// copyStderr starts a goroutine that copies f into sink and closes done,
// and f, when the pipe ends (or, after leaderExited, once it is empty).
func copyStderr(f *os.File, sink *stderrSink, done chan struct{}) *stderrGoroutine {
	g := &stderrGoroutine{r: &exitReader{f: f}, done: done}
	go func() {
		defer close(done)
		defer f.Close()
		// A small fixed buffer: a stderr flood costs no memory, and an
		// idle server not the 32 KiB of io.Copy's.
		_, _ = io.CopyBuffer(sink, g.r, make([]byte, 512))
	}()
	return g
}

func (g *stderrGoroutine) leaderExited()           { g.r.leaderExited() }
func (g *stderrGoroutine) copied() <-chan struct{} { return g.done }
