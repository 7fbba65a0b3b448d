package sim

import (
	"context"
	"slices"
	"sync"
	"testing/synctest"
	"time"
)

// agenda is the world's timed actions: a process's late answers, its
// crash, hang or exit after a while, a hang's end, a tool's work. The
// driver runs them itself, in order of their time and, at one instant,
// of their arming, each followed by a wait until everything it set off
// is done; and only once everything else that woke at that instant (a
// supervisor's timers, a host's deadlines) is done. With runtime timers
// of their own, which of a world's action and a supervisor's timer at
// the same instant ran first was the Go scheduler's choice, and a
// replay could differ (a call answered at the very instant of its
// CallTimeout returned its result in one run and timed out in the next).
type agenda struct {
	mu      sync.Mutex
	events  []event // by at, then seq
	seq     uint64
	changed chan struct{} // an event was armed (buffered 1)
}

type event struct {
	at  time.Time
	seq uint64
	f   func()
}

func newAgenda() *agenda { return &agenda{changed: make(chan struct{}, 1)} }

// after arms f to run d from now.
func (a *agenda) after(d time.Duration, f func()) {
	a.mu.Lock()
	a.seq++
	ev := event{at: time.Now().Add(d), seq: a.seq, f: f}
	i, _ := slices.BinarySearchFunc(a.events, ev, func(x, y event) int {
		if c := x.at.Compare(y.at); c != 0 {
			return c
		}
		return int(x.seq) - int(y.seq)
	})
	a.events = slices.Insert(a.events, i, ev)
	a.mu.Unlock()
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

// due takes the first event due by now.
func (a *agenda) due(now time.Time) (func(), bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.events) == 0 || a.events[0].at.After(now) {
		return nil, false
	}
	f := a.events[0].f
	a.events[0] = event{}
	a.events = a.events[1:]
	return f, true
}

// next returns the time of the first event, if any.
func (a *agenda) next() (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.events) == 0 {
		return time.Time{}, false
	}
	return a.events[0].at, true
}

// sleep is how the driver lets simulated time pass: d of it, running the
// world's agenda on the way; it returns once everything that happens at
// the instant it wakes is done, so that the driver's next step comes
// last in its instant.
func (r *run) sleep(d time.Duration) { r.until(time.Now().Add(d), nil) }

// block runs f, which waits for the world or a supervisor (Start,
// Close), on a goroutine of its own, and runs the world's agenda until f
// returns.
func (r *run) block(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	r.until(time.Time{}, done)
}

// until runs the world's agenda until the instant end (none if zero), or
// until done is closed, whichever comes first.
func (r *run) until(end time.Time, done <-chan struct{}) {
	a := r.ag
	for {
		synctest.Wait()
		for {
			f, ok := a.due(time.Now())
			if !ok {
				break
			}
			f()
			synctest.Wait()
		}
		select {
		case <-done:
			return
		default:
		}
		now := time.Now()
		if !end.IsZero() && !now.Before(end) {
			return
		}
		wake := end
		if at, ok := a.next(); ok && (wake.IsZero() || at.Before(wake)) {
			wake = at
		}
		var timer <-chan time.Time
		if !wake.IsZero() {
			t := time.NewTimer(wake.Sub(now))
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-timer:
		case <-a.changed:
		case <-done:
		}
	}
}

// deadline is a host's context that ends d from now, as
// context.WithTimeout's does (its Err is context.DeadlineExceeded, its
// Deadline the instant), but on the world's agenda: a host's deadline at
// the instant of a supervisor's own timer (HoldCalls, CallTimeout) ends
// after it, always. With a runtime timer of its own, which of the two
// came first was the Go scheduler's choice ("held 5s for a new
// connection: context deadline exceeded" in one run, "no recovery within
// HoldCalls" in its replay).
func (r *run) deadline(d time.Duration) (context.Context, context.CancelFunc) {
	c := &agendaCtx{at: time.Now().Add(d), done: make(chan struct{})}
	r.ag.after(d, func() { c.end(context.DeadlineExceeded) })
	return c, func() { c.end(context.Canceled) }
}

// agendaCtx is the context deadline returns.
type agendaCtx struct {
	at   time.Time
	done chan struct{}
	mu   sync.Mutex
	err  error
}

func (c *agendaCtx) Deadline() (time.Time, bool) { return c.at, true }
func (c *agendaCtx) Done() <-chan struct{}       { return c.done }
func (c *agendaCtx) Value(any) any               { return nil }

func (c *agendaCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *agendaCtx) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
		close(c.done)
	}
}
