// Package slots counts what the HTTP front's clients hold, so that each
// bound holds exactly: a slot is taken before what it bounds is made,
// and given back once it is gone.
package slots

import (
	"fmt"
	"sync"
)

// Slots counts the sessions the front's clients hold (in all, and per
// subject) and the per-client instances of each server. The zero value
// counts nothing yet, with no default instance bound.
type Slots struct {
	mu        sync.Mutex
	sessions  int
	bySubject map[string]int
	instances map[string]int // by server
	max       int            // the default bound of a server's instances
}

// Bound says which bound a refused client or request met.
type Bound struct{ msg string }

func (e *Bound) Error() string { return e.msg }

// SetDefault makes max the bound of a server's instances that names
// none: the front's session bound.
func (s *Slots) SetDefault(max int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.max = max
}

// Session takes a session slot for subject: at most max in all and
// perSubject for one subject (a negative bound is no bound). release
// gives it back, once however often it is called.
func (s *Slots) Session(subject string, max, perSubject int) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if max >= 0 && s.sessions >= max {
		return nil, &Bound{fmt.Sprintf("mcpfsm serves at most %d sessions at once (-max-sessions); try again later", max)}
	}
	if perSubject >= 0 && s.bySubject[subject] >= perSubject {
		return nil, &Bound{fmt.Sprintf("mcpfsm serves at most %d sessions of one caller at once (-max-sessions-per-subject); end one (DELETE) or try again later", perSubject)}
	}
	if s.bySubject == nil {
		s.bySubject = map[string]int{}
	}
	s.sessions++
	s.bySubject[subject]++
	return sync.OnceFunc(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.sessions--
		if s.bySubject[subject]--; s.bySubject[subject] == 0 {
			delete(s.bySubject, subject)
		}
	}), nil
}

// Instance takes an instance slot of server: at most max (zero: the
// default bound; negative: none).
func (s *Slots) Instance(server string, max int) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if max == 0 {
		max = s.max
	}
	if max > 0 && s.instances[server] >= max {
		return nil, &Bound{fmt.Sprintf("mcpfsm runs at most %d instances of it at once, one per client (maxInstances)", max)}
	}
	if s.instances == nil {
		s.instances = map[string]int{}
	}
	s.instances[server]++
	return sync.OnceFunc(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.instances[server]--; s.instances[server] == 0 {
			delete(s.instances, server)
		}
	}), nil
}

// Counts returns the sessions held, and the instances of each server.
func (s *Slots) Counts() (sessions int, instances map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	instances = make(map[string]int, len(s.instances))
	for k, v := range s.instances {
		instances[k] = v
	}
	return s.sessions, instances
}
