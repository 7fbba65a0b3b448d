package front

import "sync"

// subscriptions are one client's resource subscriptions: for each
// resource of a server, the front URIs the client subscribed to it with.
// A subscriptions has a lock of its own, taken alone: no other lock is
// taken under it. The client holds one; its server's subscribe and
// unsubscribe handlers change it, the relay of a server's resource
// updates reads it, and close takes what is left.
type subscriptions struct {
	mu sync.Mutex
	by map[target]map[string]bool
}

// add records a subscription to t under uri, and reports whether it is
// the first to t.
func (s *subscriptions) add(t target, uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by == nil {
		s.by = map[target]map[string]bool{}
	}
	if s.by[t] == nil {
		s.by[t] = map[string]bool{}
	}
	first := len(s.by[t]) == 0
	s.by[t][uri] = true
	return first
}

// remove forgets the subscription to t under uri, and reports whether it
// was the last to t.
func (s *subscriptions) remove(t target, uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.by[t][uri] {
		return false
	}
	delete(s.by[t], uri)
	if len(s.by[t]) == 0 {
		delete(s.by, t)
		return true
	}
	return false
}

// uris are the front URIs of the subscriptions to t.
func (s *subscriptions) uris(t target) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var fronts []string
	for front := range s.by[t] {
		fronts = append(fronts, front)
	}
	return fronts
}

// take forgets every subscription, and returns the resources they were
// to.
func (s *subscriptions) take() []target {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := make([]target, 0, len(s.by))
	for t := range s.by {
		ts = append(ts, t)
	}
	s.by = nil
	return ts
}

// sharedSubs count the clients subscribed to each resource of a shared
// instance: its supervisor holds one subscription per resource (re-sent
// at every reconnect) however many clients ask.
type sharedSubs struct {
	mu sync.Mutex
	n  map[target]int
}
