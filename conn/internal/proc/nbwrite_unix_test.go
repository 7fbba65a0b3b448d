//go:build unix

package proc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testPipe returns a pipe whose ends the test closes at its end.
func testPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	return r, w
}

// awaitErrIs fails the test unless ch yields, within 10 seconds, an error
// that is target.
func awaitErrIs(t *testing.T, ch <-chan error, target error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		if !errors.Is(err, target) {
			t.Errorf("%s: %v, want %v", what, err, target)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// line is a line of n bytes: a tag, then a byte repeated, then '\n'.
func line(tag string, fill byte, n int) []byte {
	b := bytes.Repeat([]byte{fill}, n)
	copy(b, tag+":")
	b[n-1] = '\n'
	return b
}

// TestPipeWriterFastPathAllocatesNothing: a line the pipe takes at once is
// written without an allocation (no goroutine, no channel, not even the
// lazily made Done channel of the caller's context).
func TestPipeWriterFastPathAllocatesNothing(t *testing.T) {
	r, pw := testPipe(t)
	w := newPipeWriter(pw)
	defer w.close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	msg := []byte(`{"jsonrpc":"2.0","method":"ping","id":1}` + "\n")
	const runs = 50 // 2 KiB in all: any pipe takes it with no reader
	var werr error
	allocs := testing.AllocsPerRun(runs, func() {
		if err := w.write(ctx, msg); err != nil {
			werr = err
		}
	})
	if werr != nil {
		t.Fatal(werr)
	}
	if allocs != 0 {
		t.Errorf("a write the pipe takes at once allocates %v times, want 0", allocs)
	}
	_ = pw.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	// AllocsPerRun runs the function once more to warm up.
	if want := bytes.Repeat(msg, runs+1); !bytes.Equal(got, want) {
		t.Errorf("the pipe holds %d bytes, want %d lines of %d", len(got), runs+1, len(msg))
	}
}

// endingCtx is a context that ends as soon as a writer waits on it: its
// Err is nil until its Done channel, closed, was asked for.
type endingCtx struct {
	context.Context
	asked atomic.Bool
}

func (c *endingCtx) Done() <-chan struct{} { c.asked.Store(true); return closedChan }

func (c *endingCtx) Err() error {
	if c.asked.Load() {
		return context.Canceled
	}
	return nil
}

func ending() context.Context { return &endingCtx{Context: context.Background()} }

// TestPipeWriterFullPipe: a line longer than the pipe holds is written in
// part at once; the writer whose context ends returns at once, and the
// line is still completed once the server reads, before the next line,
// which waited its turn; a writer whose context ends while it waits for
// its turn, or before it started, writes nothing.
func TestPipeWriterFullPipe(t *testing.T) {
	r, pw := testPipe(t)
	w := newPipeWriter(pw)
	defer w.close()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	const size = 256 << 10 // beyond any pipe's default capacity
	first, second, third := line("first", 'a', size), line("second", 'b', size), line("third", 'c', 10)

	if err := w.write(canceled, third); !errors.Is(err, context.Canceled) {
		t.Fatalf("write with an ended context: %v, want context.Canceled", err)
	}
	if err := w.write(ending(), first); !errors.Is(err, context.Canceled) {
		t.Fatalf("write of a line the pipe cannot take, its context ending: %v, want context.Canceled", err)
	}
	secondDone := make(chan error, 1)
	go func() { secondDone <- w.write(context.Background(), second) }()
	// The first line's rest holds the turn until the pipe is read.
	if err := w.write(ending(), third); !errors.Is(err, context.Canceled) {
		t.Fatalf("write waiting for its turn with an ended context: %v, want context.Canceled", err)
	}
	select {
	case err := <-secondDone:
		t.Fatalf("a write finished before the pipe was read: %v", err)
	default:
	}

	br := bufio.NewReaderSize(r, 64<<10)
	for i, want := range [][]byte{first, second} {
		got, err := br.ReadBytes('\n')
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("line %d is %d bytes starting %q, want %d starting %q", i, len(got), got[:min(len(got), 10)], len(want), want[:10])
		}
	}
	select {
	case err := <-secondDone:
		if err != nil {
			t.Fatalf("second write: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second write never returned after its line was read")
	}
	_ = pw.Close()
	if rest, _ := io.ReadAll(br); len(rest) != 0 {
		t.Errorf("the pipe holds %q after the lines; the write that gave up waiting wrote it anyway", rest)
	}
}

// TestPipeWriterCloseEndsABlockedWrite: closing the pipe (the process's
// terminate does) ends a write that waits for a server that never reads.
func TestPipeWriterCloseEndsABlockedWrite(t *testing.T) {
	_, pw := testPipe(t)
	w := newPipeWriter(pw)
	done := make(chan error, 1)
	go func() { done <- w.write(context.Background(), line("big", 'x', 1<<20)) }()
	w.close()
	_ = pw.Close()
	awaitErrIs(t, done, os.ErrClosed, "the write ended by closing the pipe")
	if err := w.write(context.Background(), []byte("late\n")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("write after close: %v, want os.ErrClosed", err)
	}
}

// TestPipeWriterLinesNeverInterleave: writers at once, with lines short
// and longer than the pipe, some giving up early, never mix bytes of two
// lines: every line read is whole, and every line whose write succeeded is
// there.
func TestPipeWriterLinesNeverInterleave(t *testing.T) {
	r, pw := testPipe(t)
	w := newPipeWriter(pw)
	const writers, lines = 6, 40
	sizes := []int{16, 300, 5000, 70 << 10}
	var wg sync.WaitGroup
	var mu sync.Mutex
	written := map[string]bool{}
	for i := range writers {
		wg.Go(func() {
			for j := range lines {
				tag := fmt.Sprintf("%d-%d", i, j)
				ctx, cancel := context.WithCancel(context.Background())
				if j%7 == 3 {
					cancel() // gives up at once: its line may or may not go out, whole
				}
				err := w.write(ctx, line(tag, byte('a'+i), sizes[(i+j)%len(sizes)]))
				cancel()
				if err == nil {
					mu.Lock()
					written[tag] = true
					mu.Unlock()
				}
			}
		})
	}
	seen := map[string]bool{}
	read := make(chan error, 1)
	go func() {
		br := bufio.NewReader(r)
		for {
			l, err := br.ReadBytes('\n')
			if err == io.EOF && len(l) == 0 {
				read <- nil
				return
			}
			if err != nil {
				read <- err
				return
			}
			tag, body, ok := bytes.Cut(l[:len(l)-1], []byte(":"))
			if !ok || len(tag) == 0 {
				read <- fmt.Errorf("a line of %d bytes has no tag: %q...", len(l), l[:min(len(l), 20)])
				return
			}
			var i, j int
			if _, err := fmt.Sscanf(string(tag), "%d-%d", &i, &j); err != nil {
				read <- fmt.Errorf("line tag %q: %v", tag, err)
				return
			}
			if want := sizes[(i+j)%len(sizes)]; len(l) != want || len(bytes.Trim(body, string(rune('a'+i)))) != 0 {
				read <- fmt.Errorf("line %s is %d bytes, want %d of %q: bytes of another line are mixed in", tag, len(l), want, rune('a'+i))
				return
			}
			seen[string(tag)] = true
		}
	}()
	wg.Wait()
	w.close()
	_ = pw.Close()
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	for tag := range written {
		if !seen[tag] {
			t.Errorf("line %s was written but never read", tag)
		}
	}
	gaveUp := writers * ((lines + 3) / 7) // the writes whose context ended first
	if len(written) < writers*lines-gaveUp {
		t.Errorf("only %d lines written of %d with a live context", len(written), writers*lines-gaveUp)
	}
}

// TestPipeWriterBlockingPipeWaitsOnAGoroutine: a pipe in blocking mode is
// never written from the caller's goroutine (the write could block it
// past its context); its lines still go out whole.
func TestPipeWriterBlockingPipeWaitsOnAGoroutine(t *testing.T) {
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	r, pw := os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1")
	defer r.Close()
	w := newPipeWriter(pw)
	if w.nb.rc != nil {
		t.Fatal("a blocking pipe is written from the caller's goroutine")
	}
	msg := []byte("hello\n")
	if err := w.write(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	w.close()
	_ = pw.Close()
	if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, msg) {
		t.Errorf("read %q, %v; want %q", got, err, msg)
	}
}
