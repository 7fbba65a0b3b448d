package sandbox

import (
	"bytes"
	"fmt"
	"sync"
)

// oomPhrases are what runtimes write to standard error when an allocation
// fails: Go ("fatal error: runtime: out of memory"), Node and V8 ("Allocation
// failed - JavaScript heap out of memory"), glibc's strerror(ENOMEM)
// ("Cannot allocate memory"), Python ("MemoryError"), C++
// ("std::bad_alloc") and the sanitizers ("failed to allocate"). Compared
// in lower case.
var oomPhrases = [][]byte{
	[]byte("out of memory"),
	[]byte("cannot allocate memory"),
	[]byte("allocation failed"),
	[]byte("failed to allocate"),
	[]byte("memoryerror"),
	[]byte("bad_alloc"),
}

// oomCarry is how much of the end of one write is kept, so that a phrase
// split between two writes is still seen.
const oomCarry = 32

// oomWatch reads a program's standard error for a failed allocation. It
// sees the whole stream, not only the tail a process keeps: a runtime's
// stack trace follows its last words.
type oomWatch struct {
	mu    sync.Mutex
	carry []byte
	seen  bool
}

// Write implements io.Writer; it never fails.
func (w *oomWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen {
		return len(p), nil
	}
	b := bytes.ToLower(append(w.carry, p...))
	for _, ph := range oomPhrases {
		if bytes.Contains(b, ph) {
			w.seen = true
			return len(p), nil
		}
	}
	w.carry = append(w.carry[:0], b[max(0, len(b)-oomCarry):]...)
	return len(p), nil
}

func (w *oomWatch) sawOOM() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}

// memoryLimit names the limit an exit ran into.
func memoryLimit(mb int) string {
	return fmt.Sprintf("out of memory under the sandbox's memoryMB %d", mb)
}
