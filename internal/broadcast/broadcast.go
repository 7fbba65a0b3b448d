// Package broadcast is the "closed and replaced" channel: a Signal's
// channel is closed at the next change, waking every waiter at once, and
// a fresh one is handed to whoever waits next. A waiter takes the channel
// before it reads the state the Signal guards, so it misses no change.
package broadcast

// Signal wakes the waiters of the next change. The zero value is ready,
// and allocates a channel only once someone waits. It is not safe for
// concurrent use by itself: its owner calls it under the lock that guards
// the state whose changes it announces.
type Signal struct{ ch chan struct{} }

// C returns the channel closed at the next Notify.
func (s *Signal) C() <-chan struct{} {
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Notify closes the channel of the waiters, if any wait.
func (s *Signal) Notify() {
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}
