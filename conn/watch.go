package conn

import (
	"context"
	"sync"
)

// WatchBuffer is how many transitions a channel returned by
// [Supervisor.Watch] holds for a reader that has fallen behind. Once it is
// full, each new transition pushes out the oldest unread one.
const WatchBuffer = 64

// Watch returns a channel that receives every transition of the connection
// machine from now on, in order, each with the same fields OnTransition
// sees, plus Dropped.
//
// Unlike Config.OnTransition, a watcher never holds up the supervisor: the
// channel is buffered ([WatchBuffer] transitions), and when a reader falls
// so far behind that the buffer is full, the oldest unread transition is
// dropped to make room for the newest. The transition received right after
// a gap says how many were lost in it (Transition.Dropped), so a reader
// that cares re-reads [Supervisor.Status] then.
//
// The channel is closed once the supervisor is disposed, after the final
// transition into [Disposed], or when ctx ends; transitions already
// buffered can still be received after it is closed. A Watch made after
// disposal, or with a ctx that has already ended, returns a closed
// channel. A reader may stop reading at any time: an abandoned channel
// holds no goroutine.
//
// To follow a supervisor without missing a change, call Watch first and
// then read Status: a transition between the two is then both in the
// snapshot and on the channel, never in neither.
func (s *Supervisor) Watch(ctx context.Context) <-chan Transition {
	return s.watch.add(ctx)
}

// watchers is a supervisor's set of Watch channels. The loop is their only
// sender, and sends and closes happen under mu, so a channel is never sent
// on after it is closed.
type watchers struct {
	mu       sync.Mutex
	set      map[*watcher]struct{}
	disposed bool // the disposed transition was delivered: no new watchers
}

type watcher struct {
	ch      chan Transition
	stop    func() bool  // unregisters the ctx callback
	scratch []Transition // reused when the buffer overflows
}

func (ws *watchers) add(ctx context.Context) <-chan Transition {
	w := &watcher{ch: make(chan Transition, WatchBuffer)}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.disposed || ctx.Err() != nil {
		close(w.ch)
		return w.ch
	}
	if ws.set == nil {
		ws.set = map[*watcher]struct{}{}
	}
	ws.set[w] = struct{}{}
	// If ctx ends at once, the callback waits for mu, so it finds w.
	w.stop = context.AfterFunc(ctx, func() { ws.remove(w) })
	return w.ch
}

func (ws *watchers) remove(w *watcher) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if _, ok := ws.set[w]; ok {
		delete(ws.set, w)
		close(w.ch)
	}
}

// deliver hands t to every watcher without blocking, and closes every
// channel after the disposed transition. It runs on the loop, from the
// machine's observer.
func (ws *watchers) deliver(t Transition) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for w := range ws.set {
		w.send(t)
	}
	if t.To == Disposed {
		for w := range ws.set {
			w.stop() // if the callback already runs, it finds w gone
			close(w.ch)
		}
		ws.set = nil
		ws.disposed = true
	}
}

// send queues t. When the buffer is full it takes back what the reader has
// not read, drops the oldest, adds the dropped count (and whatever that
// one carried) to the transition that now comes first, and queues the
// rest again. The re-sends cannot block: only the loop sends, and the
// reader can only make more room.
func (w *watcher) send(t Transition) {
	select {
	case w.ch <- t:
		return
	default:
	}
	buf := w.scratch[:0]
drain:
	for {
		select {
		case x := <-w.ch:
			buf = append(buf, x)
		default:
			break drain
		}
	}
	buf = append(buf, t)
	full := buf
	if over := len(buf) - cap(w.ch); over > 0 {
		lost := 0
		for _, x := range buf[:over] {
			lost += x.Dropped + 1
		}
		buf = buf[over:]
		buf[0].Dropped += lost
	}
	for _, x := range buf {
		w.ch <- x
	}
	clear(full) // hold no references to the transitions' errors
	w.scratch = full[:0]
}
