package console

import (
	"sync"

	"github.com/mcpfsm/mcpfsm/conn"
)

// DefaultHistory is how many recent transitions the console keeps per
// server when Options.HistorySize is zero.
const DefaultHistory = 20

// history keeps the recent transitions of every server, by name, and
// wakes the event streams when something changed. It is safe for
// concurrent use, and Record never blocks on a reader.
type history struct {
	size int

	mu      sync.Mutex
	byName  map[string][]conn.Transition // oldest first, at most size
	changed chan struct{}                // closed and replaced by notify
}

func newHistory(size int) *history {
	return &history{size: size, byName: map[string][]conn.Transition{}, changed: make(chan struct{})}
}

// record appends t to its server's ring and notifies.
func (h *history) record(t conn.Transition) {
	h.mu.Lock()
	ring := append(h.byName[t.Server], t)
	if len(ring) > h.size {
		// Copy rather than reslice so the backing array stays bounded.
		ring = append([]conn.Transition(nil), ring[len(ring)-h.size:]...)
	}
	h.byName[t.Server] = ring
	h.mu.Unlock()
	h.notify()
}

// recent returns a copy of the server's recent transitions, oldest first.
func (h *history) recent(server string) []conn.Transition {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]conn.Transition(nil), h.byName[server]...)
}

// notify wakes every waiter on the current changed channel.
func (h *history) notify() {
	h.mu.Lock()
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
}

// wait returns a channel closed at the next notify.
func (h *history) wait() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changed
}
