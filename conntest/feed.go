package conntest

import "sync"

// feed is an unbounded mailbox: push never blocks the code under test,
// however far behind the test reads, and C delivers every value in order.
// A goroutine, started by the first C and stopped by stop, moves values
// from the backlog to the channel.
type feed[T any] struct {
	mu      sync.Mutex
	backlog []T
	wake    chan struct{} // a push happened; capacity 1
	out     chan T
	done    chan struct{} // closed by stop
	start   sync.Once
	end     sync.Once
}

func newFeed[T any]() *feed[T] {
	return &feed[T]{wake: make(chan struct{}, 1), out: make(chan T), done: make(chan struct{})}
}

// push appends v to the backlog; it never blocks.
func (f *feed[T]) push(v T) {
	f.mu.Lock()
	f.backlog = append(f.backlog, v)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default: // a wake-up is pending; the backlog carries the value
	}
}

// C returns the channel the values arrive on.
func (f *feed[T]) C() <-chan T {
	f.start.Do(func() { go f.pump() })
	return f.out
}

// stop ends the pump; values not yet read are dropped.
func (f *feed[T]) stop() { f.end.Do(func() { close(f.done) }) }

func (f *feed[T]) pump() {
	for {
		f.mu.Lock()
		if len(f.backlog) == 0 {
			f.mu.Unlock()
			select {
			case <-f.wake:
				continue
			case <-f.done:
				return
			}
		}
		v := f.backlog[0]
		var zero T
		f.backlog[0] = zero
		f.backlog = f.backlog[1:]
		f.mu.Unlock()
		select {
		case f.out <- v:
		case <-f.done:
			return
		}
	}
}
