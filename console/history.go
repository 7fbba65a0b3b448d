package console

import (
	"sync"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/broadcast"
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
	changed broadcast.Signal             // at every notify
}

func newHistory(size int) *history {
	return &history{size: size, byName: map[string][]conn.Transition{}}
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

// notify wakes every waiter of the next change.
func (h *history) notify() {
	h.mu.Lock()
	h.changed.Notify()
	h.mu.Unlock()
}

// wait returns a channel closed at the next notify.
func (h *history) wait() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changed.C()
}
