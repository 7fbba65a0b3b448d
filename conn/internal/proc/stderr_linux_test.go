//go:build linux

package proc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// chunkWriter counts what it is given and keeps its first keepBytes; each
// Write first announces itself on entered (if not nil) and then waits for
// release (if not nil). It keeps no more than that so that a flood's
// writer costs nothing: a 16 MiB buffer growing under the race detector
// took seconds on a loaded machine, long after the copy had handed over
// its last chunk.
type chunkWriter struct {
	entered chan struct{}
	release chan struct{}
	busy    atomic.Bool
	mu      sync.Mutex
	buf     bytes.Buffer  // the first keepBytes written
	n       int           // bytes written
	got     chan struct{} // closed once n reaches want
	want    int
	overlap atomic.Bool // two Writes ran at once
	tooBig  atomic.Bool // a chunk beyond stderrChunk
}

// keepBytes is how much of what it is given a chunkWriter keeps.
const keepBytes = 64 << 10

func newChunkWriter(want int) *chunkWriter {
	return &chunkWriter{got: make(chan struct{}), want: want}
}

func (c *chunkWriter) Write(b []byte) (int, error) {
	if !c.busy.CompareAndSwap(false, true) {
		c.overlap.Store(true)
	}
	defer c.busy.Store(false)
	if len(b) > stderrChunk {
		c.tooBig.Store(true)
	}
	if c.entered != nil {
		select {
		case c.entered <- struct{}{}:
		default:
		}
	}
	if c.release != nil {
		<-c.release
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	before := c.n
	c.n += len(b)
	if room := keepBytes - c.buf.Len(); room > 0 {
		c.buf.Write(b[:min(room, len(b))])
	}
	if before < c.want && c.n >= c.want {
		close(c.got)
	}
	return len(b), nil
}

func (c *chunkWriter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// mustWrite writes s to the pipe.
func mustWrite(t *testing.T, w *os.File, s string) {
	t.Helper()
	if _, err := w.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// watchedPipe starts a stderr copy of a new pipe into sink, served by the
// reaper, and returns the pipe's write end.
func watchedPipe(t *testing.T, sink *stderrSink) (*os.File, *stderrWatch) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	c := startStderr(r, sink)
	sw, ok := c.(*stderrWatch)
	if !ok {
		t.Fatalf("standard error is copied by %T, want the reaper's *stderrWatch", c)
	}
	return w, sw
}

// TestStderrWatchFeedsTailAndWriter: standard error served by the reaper
// reaches both the tail and the configured writer, in order, and the copy
// ends, leaving no goroutine, when every writer of the pipe is gone.
func TestStderrWatchFeedsTailAndWriter(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	text := "one\ntwo\nthree\n"
	for _, withOut := range []bool{false, true} {
		out := newChunkWriter(len(text))
		sink := &stderrSink{tail: &Tail{}}
		if withOut {
			sink.out = out
		}
		w, sw := watchedPipe(t, sink)
		for _, l := range []string{"one\n", "two\n", "three\n"} {
			mustWrite(t, w, l)
		}
		if withOut {
			awaitClosed(t, out.got, "the writer to get the lines")
			if got := out.String(); got != text {
				t.Errorf("the writer got %q, want %q", got, text)
			}
		}
		_ = w.Close()
		awaitClosed(t, sw.copied(), "the copy to end with the pipe")
		if diff := cmp.Diff([]string{"one", "two", "three"}, lines(sink.tail)); diff != "" {
			t.Errorf("with writer %v: tail (-want +got):\n%s", withOut, diff)
		}
	}
}

// TestStderrWatchDrainsAfterLeaderExit: once the leader exited, what the
// pipe holds reaches the tail and the copy ends, although a descendant
// still holds the write end; with a chunk still with a slow writer, the
// drain follows once the writer returns.
func TestStderrWatchDrainsAfterLeaderExit(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	t.Run("idle", func(t *testing.T) {
		sink := &stderrSink{tail: &Tail{}}
		w, sw := watchedPipe(t, sink)
		mustWrite(t, w, "fatal: missing API key\n")
		sw.leaderExited()
		awaitClosed(t, sw.copied(), "the drain to end with the write end still open")
		if diff := cmp.Diff([]string{"fatal: missing API key"}, lines(sink.tail)); diff != "" {
			t.Errorf("tail (-want +got):\n%s", diff)
		}
	})
	t.Run("writer busy", func(t *testing.T) {
		out := newChunkWriter(len("first\nsecond\n"))
		out.entered, out.release = make(chan struct{}, 1), make(chan struct{})
		sink := &stderrSink{tail: &Tail{}, out: out}
		w, sw := watchedPipe(t, sink)
		mustWrite(t, w, "first\n")
		awaitClosed(t, out.entered, "the writer to get the first chunk")
		mustWrite(t, w, "second\n")
		sw.leaderExited()
		select {
		case <-sw.copied():
			t.Fatal("the copy ended while a chunk was still with the writer")
		default:
		}
		close(out.release)
		awaitClosed(t, sw.copied(), "the drain after the writer returned")
		if got := out.String(); got != "first\nsecond\n" {
			t.Errorf("the writer got %q, want both lines", got)
		}
		if diff := cmp.Diff([]string{"first", "second"}, lines(sink.tail)); diff != "" {
			t.Errorf("tail (-want +got):\n%s", diff)
		}
	})
}

// TestStderrFloodCostsNoMemory: a server that floods standard error costs
// no allocation per chunk without a writer (the reaper reads into its own
// buffer and the tail keeps a bounded end), and with one a single chunk of
// at most stderrChunk bytes is with it at a time.
func TestStderrFloodCostsNoMemory(t *testing.T) {
	const total = 16 << 20
	block := bytes.Repeat([]byte("flood flood flood\n"), 64<<10/18)
	flood := func(w *os.File) {
		for sent := 0; sent < total; sent += len(block) {
			if _, err := w.Write(block); err != nil {
				t.Error(err)
				return
			}
		}
		_ = w.Close()
	}
	sink := &stderrSink{tail: &Tail{}}
	w, sw := watchedPipe(t, sink)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	flood(w)
	awaitClosed(t, sw.copied(), "the end of the flood")
	runtime.ReadMemStats(&after)
	grown := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d MiB flood allocated %d bytes", total>>20, grown)
	if grown > 16<<10 { // an allocation per chunk read (4096 reads at least) exceeds this
		t.Errorf("copying a %d MiB flood allocated %d KiB, want at most 16", total>>20, grown>>10)
	}
	if got := lines(sink.tail); len(got) == 0 || got[len(got)-1] != "flood flood flood" || len(sink.tail.Bytes()) > 2*TailBytes {
		t.Errorf("tail after the flood: %d bytes, %q", len(sink.tail.Bytes()), got)
	}

	out := newChunkWriter(total)
	sink = &stderrSink{tail: &Tail{}, out: out}
	w, sw = watchedPipe(t, sink)
	flood(w)
	awaitClosed(t, sw.copied(), "the end of the flood with a writer")
	if out.overlap.Load() || out.tooBig.Load() {
		t.Errorf("the writer got chunks at once (%v) or beyond %d bytes (%v)", out.overlap.Load(), stderrChunk, out.tooBig.Load())
	}
	awaitClosed(t, out.got, "the writer to get the whole flood")
}

// TestSlowStderrWriterHoldsOnlyItsServer: a server whose configured
// standard error writer blocks does not hold back another server's
// standard error, nor its exit and its last lines.
func TestSlowStderrWriterHoldsOnlyItsServer(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var procs []*Process
	stuck := newChunkWriter(len("stuck\n"))
	stuck.entered, stuck.release = make(chan struct{}, 1), make(chan struct{})
	defer func() {
		close(stuck.release)
		for _, p := range procs {
			awaitClosed(t, p.terminate(0), "a killed server's exit")
			_ = p.stdout.Close()
		}
	}()
	start := func(script string, stderr *chunkWriter) *Process {
		t.Helper()
		cfg := Spec{Path: "sh", Args: []string{"-c", script}, Grace: time.Second}
		if stderr != nil {
			cfg.Stderr = stderr
		}
		p, err := startProcess(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
		return p
	}
	start("echo stuck >&2; exec sleep 60", stuck)
	awaitClosed(t, stuck.entered, "the stuck writer to get its server's line")

	out := newChunkWriter(len("hello\n"))
	talker := start("echo hello >&2; exit 0", out)
	awaitClosed(t, out.got, "the other server's writer to get its line")
	awaitClosed(t, talker.exited, "the other server's exit")

	quitter := start("echo one >&2; echo 'fatal: missing API key' >&2; exit 3", nil)
	awaitClosed(t, quitter.exited, "the exit of a server without a writer")
	if got, ok := quitter.Exit(); !ok || got != (Exit{Code: 3}) {
		t.Errorf("Exit() = %+v, %v; want status 3", got, ok)
	}
	if diff := cmp.Diff([]string{"one", "fatal: missing API key"}, lines(quitter.tail)); diff != "" {
		t.Errorf("the exited server's tail (-want +got):\n%s", diff)
	}
}

// failingWriter fails every Write, announcing each on calls.
type failingWriter struct{ calls chan struct{} }

func (f failingWriter) Write([]byte) (int, error) {
	f.calls <- struct{}{}
	return 0, errors.New("disk full")
}

// TestStderrWriterThatFailsIsDropped: after the configured writer fails,
// it gets nothing more, and the pipe is still read into the tail (the
// server is not left to fill its pipe, nor killed by SIGPIPE).
func TestStderrWriterThatFailsIsDropped(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	out := failingWriter{calls: make(chan struct{}, 2)}
	sink := &stderrSink{tail: &Tail{}, out: out}
	w, sw := watchedPipe(t, sink)
	mustWrite(t, w, "a\n")
	awaitClosed(t, out.calls, "the writer's first call")
	mustWrite(t, w, "b\n")
	_ = w.Close()
	awaitClosed(t, sw.copied(), "the end of the copy")
	if n := len(out.calls); n != 0 {
		t.Errorf("the failed writer was called %d more times", n)
	}
	if diff := cmp.Diff([]string{"a", "b"}, lines(sink.tail)); diff != "" {
		t.Errorf("tail (-want +got):\n%s", diff)
	}
}
