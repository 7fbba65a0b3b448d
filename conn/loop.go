package conn

import "sync"

// The supervisor's event loop runs on a goroutine only while it has work:
// post queues a turn and starts the goroutine if none runs, and the
// goroutine ends once the queue is empty. An idle supervisor (established,
// or waiting out a backoff) therefore holds no goroutine at all; its timers
// and its generations post when something happens. Turns run one at a
// time, in the order they were posted, so every loop-owned field is still
// touched by one goroutine at a time.

// turns is the loop's queue of work.
type turns struct {
	mu       sync.Mutex
	queue    []func()
	running  bool // a goroutine is running the loop
	finished bool // the machine reached its terminal state: posts are dropped
}

// post hands f to the loop, which runs it in order with everything else
// it does. It reports false, and drops f, once the loop has finished.
func (s *Supervisor) post(f func()) bool {
	start, ok := s.turns.add(f)
	s.startLoop(start, false)
	return ok
}

// startLoop starts the loop when a post found it idle (start). With own,
// the caller is a goroutine of the supervisor's own that has nothing left
// to do that cannot wait (a generation's goroutine with the attempt's
// outcome, the goroutine that reaped a server: see genPayload.own), and
// runs the loop itself, at once. That saves the start of a
// goroutine, and on an idle machine the wake-up of another processor,
// on the way from the event to the loop. Never from a caller's goroutine
// or the SDK's: the loop may run there for a while, and a host's callback
// on the loop (OnTransition, its Logger) that waits for something the SDK
// must first do (retire a call at a session's end) would wait until the
// call's CallTimeout.
func (s *Supervisor) startLoop(start, own bool) {
	switch {
	case !start:
	case own:
		s.loop()
	default:
		go s.loop()
	}
}

// postHere is post from a goroutine of the supervisor's own (see
// startLoop).
func (s *Supervisor) postHere(f func()) bool {
	start, ok := s.turns.add(f)
	s.startLoop(start, true)
	return ok
}

// add queues f and reports whether the caller must start the loop, or
// false, false once the loop has finished.
func (t *turns) add(f func()) (start, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.finished {
		return false, false
	}
	t.queue = append(t.queue, f)
	start = !t.running
	t.running = true
	return start, true
}

// next takes the next turn, or reports false (and marks the loop stopped)
// when there is none.
func (t *turns) next() (func(), bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.queue) == 0 {
		t.running = false
		t.queue = nil // an idle supervisor keeps no buffer
		return nil, false
	}
	f := t.queue[0]
	t.queue[0] = nil
	t.queue = t.queue[1:]
	return f, true
}

// finish drops every later post.
func (t *turns) finish() {
	t.mu.Lock()
	t.finished, t.running, t.queue = true, false, nil
	t.mu.Unlock()
}

// loop runs the queued turns until there are none, or until the machine
// reaches its terminal state, which closes done.
func (s *Supervisor) loop() {
	for {
		f, ok := s.turns.next()
		if !ok {
			// Idle: the machine keeps only its state until the next
			// event (about 4 KiB less per supervisor at rest), unless an
			// attempt is in flight, whose outcome comes within moments
			// and would only build the engine again.
			if s.machine.State() != Connecting {
				s.machine.Rest()
			}
			return
		}
		f()
		s.afterTurn()
		if s.machine.State().Terminal() {
			s.turns.finish()
			close(s.done)
			return
		}
	}
}

// afterTurn is what the loop checks after every turn: a backoff too short
// for a timer starts the next attempt at once, without a timer or a trip
// through the queue; and the process that halted reconnecting may have
// exited since.
func (s *Supervisor) afterTurn() {
	for r := s.retry; r != nil && r.timer == nil && !isDone(s.closing); r = s.retry {
		s.fire(r.event, Payload{Attempt: r.payload.Attempt, MaxAttempts: r.payload.MaxAttempts})
	}
	if s.stuck != nil && !s.stuckGone && isDone(s.stuck.released) {
		s.stuckReleased()
	}
}

// kick wakes the loop for a list_changed flag set on some generation; a
// wake-up already queued carries the news.
func (s *Supervisor) kick() {
	if s.kicked.CompareAndSwap(false, true) {
		s.post(func() {
			s.kicked.Store(false)
			s.listChanged()
		})
	}
}

// closeRequested is the turn Close posts: dispose, unless disposal is
// already under way.
func (s *Supervisor) closeRequested() {
	if s.machine.Can(EventDispose) {
		s.fire(EventDispose, Payload{})
	}
}
