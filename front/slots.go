package front

import (
	"fmt"
	"sync"
)

// slots count what the HTTP front's clients hold, so that each bound
// holds exactly: a slot is taken before what it bounds is made, and
// given back once it is gone.
type slots struct {
	mu        sync.Mutex
	sessions  int
	bySubject map[string]int
	instances map[string]int // by server
	max       int            // HTTPOptions.MaxSessions, the default bound of a server's instances
}

// boundError says which bound a refused client or request met.
type boundError struct{ msg string }

func (e *boundError) Error() string { return e.msg }

// session takes a session slot for subject: at most max in all and
// perSubject for one subject (a negative bound is no bound).
func (s *slots) session(subject string, max, perSubject int) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if max >= 0 && s.sessions >= max {
		return nil, &boundError{fmt.Sprintf("mcpfsm serves at most %d sessions at once (-max-sessions); try again later", max)}
	}
	if perSubject >= 0 && s.bySubject[subject] >= perSubject {
		return nil, &boundError{fmt.Sprintf("mcpfsm serves at most %d sessions of one caller at once (-max-sessions-per-subject); end one (DELETE) or try again later", perSubject)}
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

// instance takes an instance slot of server: at most max (zero: the
// session bound).
func (s *slots) instance(server string, max int) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if max == 0 {
		max = s.max
	}
	if max > 0 && s.instances[server] >= max {
		return nil, &boundError{fmt.Sprintf("mcpfsm runs at most %d instances of it at once, one per client (maxInstances)", max)}
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

// counts returns the sessions held, and the instances of each server.
func (s *slots) counts() (sessions int, instances map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	instances = make(map[string]int, len(s.instances))
	for k, v := range s.instances {
		instances[k] = v
	}
	return s.sessions, instances
}
