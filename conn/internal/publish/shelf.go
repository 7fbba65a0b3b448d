package publish

import (
	"slices"
	"sync"

	"github.com/mcpfsm/mcpfsm/internal/broadcast"
)

// Shelf keeps one listing L per server, each server reserved by an owner
// O: a listing is put or dropped whole, in one step, and every change
// (one server's listing put, dropped, or released with its reservation)
// is announced on a signal. The zero value is an empty shelf ready to
// use. A Shelf must not be copied after first use.
type Shelf[O, L any] struct {
	mu      sync.RWMutex
	slots   map[string]*slot[O, L]
	changed broadcast.Signal
}

// slot is one server's place, reserved by its owner and filled by each
// Put; its pointer tells a stale release from the current one.
type slot[O, L any] struct {
	owner   O
	listing L
	listed  bool // false until the first Put, and after a Drop
}

// Reserve claims server for owner. It fails with [ErrReserved] while the
// name is held. The returned release frees it (a listing on the shelf
// goes with it), unless it was released already and claimed again.
func (s *Shelf[O, L]) Reserve(server string, owner O) (func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.slots == nil {
		s.slots = map[string]*slot[O, L]{}
	}
	return reserve(&s.mu, s.slots, server, &slot[O, L]{owner: owner}, func(sl *slot[O, L]) {
		if sl.listed {
			s.changed.Notify()
		}
	})
}

// Put swaps in server's listing, if the server is reserved. still, when
// not nil, is asked under the shelf's lock, so a caller's "is this listing
// still current" and the swap are one step, ordered with every Drop;
// when it returns false nothing changes.
func (s *Shelf[O, L]) Put(server string, listing L, still func() bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if still != nil && !still() {
		return
	}
	if sl, ok := s.slots[server]; ok {
		sl.listing, sl.listed = listing, true
		s.changed.Notify()
	}
}

// Drop removes server's listing; the server stays reserved.
func (s *Shelf[O, L]) Drop(server string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl, ok := s.slots[server]; ok && sl.listed {
		var zero L
		sl.listing, sl.listed = zero, false
		s.changed.Notify()
	}
}

// Owner returns the owner that reserved server.
func (s *Shelf[O, L]) Owner(server string) (O, bool) {
	s.mu.RLock()
	sl, ok := s.slots[server]
	s.mu.RUnlock()
	if !ok {
		var zero O
		return zero, false
	}
	return sl.owner, true
}

// Changed returns a channel closed at the next change of the listings.
// Take it before reading them, and no change is missed.
func (s *Shelf[O, L]) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed.C()
}

// Collect concatenates what of picks from each listing on the shelf, in
// the order of the servers' names.
func Collect[O, L, T any](s *Shelf[O, L], of func(L) []T) []T {
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := make([]string, 0, len(s.slots))
	for name, sl := range s.slots {
		if sl.listed {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var out []T
	for _, name := range names {
		out = append(out, of(s.slots[name].listing)...)
	}
	return out
}
