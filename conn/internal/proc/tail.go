package proc

import (
	"bytes"
	"sync"
	"time"
)

// TailBytes is how much of the end of a child's standard error a
// [Process] keeps at least.
const TailBytes = 2048

// stderrDrain bounds how long, after a child exited, its standard error
// is still read: what it wrote before exiting is in the pipe already, and
// a grandchild that keeps the pipe open must not hold the close barrier.
const stderrDrain = 100 * time.Millisecond

// Tail keeps the end of a child's standard error: at least the last
// [TailBytes] bytes written, in at most twice that. The zero value is
// ready to use; it is safe for concurrent use.
type Tail struct {
	mu  sync.Mutex
	buf []byte
}

// Write keeps the end of p; it never fails.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(p) >= TailBytes {
		t.buf = append(t.buf[:0], p[len(p)-TailBytes:]...)
		return len(p), nil
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*TailBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-TailBytes:]...)
	}
	return len(p), nil
}

// Bytes returns a copy of what is kept.
func (t *Tail) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return bytes.Clone(t.buf)
}
