package publish

import (
	"slices"
	"strings"
	"sync"

	"github.com/mcpfsm/mcpfsm/internal/broadcast"
)

// Keys tells a [Set] what it needs to know of its values: the public name
// a value is published under, and whether a value the set holds is still
// the one a caller registered (a Replace removes only those). A Keys is a
// type without state, so the zero Set needs no setting up.
type Keys[V any] interface {
	Name(v V) string
	Same(held, old V) bool
}

// Set is a concurrency-safe set of values by public name, with the server
// names reserved with it and a signal at every change. The zero value is
// an empty set ready to use. A Set must not be copied after first use.
type Set[V any, K Keys[V]] struct {
	mu      sync.RWMutex
	entries map[string]*entry[V]
	servers map[string]*reservation
	changed broadcast.Signal // at every change of entries
}

// entry is one registration; its pointer tells a stale unregister from
// the current one.
type entry[V any] struct{ v V }

// init makes a zero set usable; s.mu is held for writing.
func (s *Set[V, K]) init() {
	if s.entries == nil {
		s.entries, s.servers = map[string]*entry[V]{}, map[string]*reservation{}
	}
}

// Register adds v under its name. It fails with a [*Refused] of
// [ErrEmptyName] or [ErrTaken], changing nothing. The returned function
// removes this registration (and only this one) and may be called any
// number of times.
func (s *Set[V, K]) Register(v V) (func(), error) {
	var k K
	name := k.Name(v)
	if name == "" {
		return nil, &Refused[V]{Why: ErrEmptyName, Value: v}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	if held, ok := s.entries[name]; ok {
		return nil, &Refused[V]{Why: ErrTaken, Name: name, Value: v, Holder: held.v}
	}
	un := s.add(name, v)
	s.changed.Notify()
	return un, nil
}

// add inserts v under name and returns its unregister function; s.mu is
// held for writing.
func (s *Set[V, K]) add(name string, v V) func() {
	e := &entry[V]{v}
	s.entries[name] = e
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.entries[name] == e {
			delete(s.entries, name)
			s.changed.Notify()
		}
	}
}

// Replace removes those of old that the set still holds as they were
// (Keys.Same) and adds next, under one lock and as one change, so a
// concurrent reader sees either the old values or the new ones. If a
// value of next has an empty name, shares its name with another of next,
// or takes the name of a value that stays, it fails with a [*Refused]
// (for the first such value of next) and nothing changes. It returns one
// unregister function per value of next, in order.
func (s *Set[V, K]) Replace(old, next []V) ([]func(), error) {
	var k K
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	remove := make(map[string]bool, len(old))
	for _, v := range old {
		name := k.Name(v)
		if held, ok := s.entries[name]; ok && k.Same(held.v, v) {
			remove[name] = true
		}
	}
	seen := make(map[string]bool, len(next))
	for _, v := range next {
		name := k.Name(v)
		if name == "" {
			return nil, &Refused[V]{Why: ErrEmptyName, Value: v}
		}
		if seen[name] {
			return nil, &Refused[V]{Why: ErrTwice, Name: name, Value: v}
		}
		seen[name] = true
		if held, ok := s.entries[name]; ok && !remove[name] {
			return nil, &Refused[V]{Why: ErrTaken, Name: name, Value: v, Holder: held.v}
		}
	}
	for name := range remove {
		delete(s.entries, name)
	}
	uns := make([]func(), len(next))
	for i, v := range next {
		uns[i] = s.add(k.Name(v), v)
	}
	s.changed.Notify()
	return uns, nil
}

// Reserve claims a server name. It fails with [ErrReserved] while the
// name is held; the returned release frees it, unless it was released
// already and claimed again.
func (s *Set[V, K]) Reserve(server string) (func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	return reserve(&s.mu, s.servers, server, &reservation{server}, nil)
}

// Changed returns a channel closed at the next change of the values: a
// registration, an unregistration or a replacement, however many values
// it touches. Take it before reading the values, and no change is missed.
func (s *Set[V, K]) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed.C()
}

// List returns the values sorted by name.
func (s *Set[V, K]) List() []V {
	var k K
	s.mu.RLock()
	out := make([]V, 0, len(s.entries))
	for _, e := range s.entries {
		out = append(out, e.v)
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b V) int { return strings.Compare(k.Name(a), k.Name(b)) })
	return out
}

// Lookup returns the value registered under name.
func (s *Set[V, K]) Lookup(name string) (V, bool) {
	s.mu.RLock()
	e, ok := s.entries[name]
	s.mu.RUnlock()
	if !ok {
		var zero V
		return zero, false
	}
	return e.v, true
}
