package conn

import "sync"

// endNotifier is implemented by a transport that learns of a session's end
// sooner than the session's Wait, or without a goroutine blocked in it: a
// stdio transport knows when its process exits, and when the SDK closes its
// connection. notifyEnd arranges for f to be called once, on the first of
// those (exited reports which), and reports false if it cannot (the
// transport never connected).
type endNotifier interface {
	notifyEnd(f func(exited bool)) bool
}

// endSignal calls its function once, for the first event fired; a
// function registered after that event is called at once.
type endSignal struct {
	mu     sync.Mutex
	fired  bool
	exited bool
	f      func(exited bool)
}

// fire records the end; the function, if registered, runs on the caller's
// goroutine and must not block.
func (e *endSignal) fire(exited bool) {
	e.mu.Lock()
	if e.fired {
		e.mu.Unlock()
		return
	}
	e.fired, e.exited = true, exited
	f := e.f
	e.mu.Unlock()
	if f != nil {
		f(exited)
	}
}

func (e *endSignal) notify(f func(exited bool)) {
	e.mu.Lock()
	if e.fired {
		exited := e.exited
		e.mu.Unlock()
		f(exited)
		return
	}
	e.f = f
	e.mu.Unlock()
}

// exitNotifier is implemented by a [Terminator] that can call f, on the
// goroutine that finds its process (group) gone, once the channel its
// Terminate returns is closed: at once if it already is. f must not
// block. onExit reports false if it cannot (no process was started); the
// caller then waits for the channel.
type exitNotifier interface {
	onExit(f func()) bool
}
