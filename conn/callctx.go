package conn

import (
	"context"
	"sync"
	"time"
)

// callCtx is the context of one in-flight call, and its node in the
// generation's list of calls (see calls). It carries the caller's values
// and cancellation, and adds the conn's own: CallTimeout and the
// generation's shutdown. One allocation per call pays for all of it, where
// context.WithCancel and a separate list node cost three, plus the lazily
// made Done channel.
//
// The Done channel comes from the generation's free list: a call that ends
// without being cancelled returns its channel there, since nothing closed
// it. (A sync.Pool would lose its channels at every garbage collection,
// and a call of a few hundred kilobytes of JSON sees many.) The SDK
// reads Done only while the call runs. After the call has ended the
// context counts as cancelled (Err returns context.Canceled and Done a
// closed channel), as the context of context.WithCancel would after its
// deferred cancel; code that kept the Done channel of a finished call past
// its end, which the SDK does not do, would not see it closed.
type callCtx struct {
	parent   context.Context
	calls    *calls
	deadline time.Time // CallTimeout after the start, on the supervisor's clock

	// Guarded by the calls' mutex.
	prev, next *callCtx

	mu     sync.Mutex
	done   chan struct{} // nil until Done is first called
	err    error         // set when cancelled
	reason cancelReason
	ended  bool         // the call returned: nothing may close done any more
	stop   func() bool  // stops the propagation of the parent's cancellation
	afters []*afterFunc // registered by AfterFunc (children of this context)
}

// closedChan is the Done channel of a call that has ended.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

type cancelReason uint8

const (
	notCancelled cancelReason = iota
	byTimeout                 // CallTimeout expired
	byShutdown                // the generation was shut down
	byParent                  // the caller's context ended
)

type afterFunc struct {
	f    func()
	once sync.Once
}

// Deadline is the caller's. CallTimeout's is on the supervisor's clock,
// which may be a test's fake one, so it is enforced by cancellation alone
// (as it was with context.WithCancel) and not reported to code that would
// compare it with the real time.
func (x *callCtx) Deadline() (time.Time, bool) { return x.parent.Deadline() }

// Done returns the call's channel, made on first use. When the caller's
// context can be cancelled, its cancellation is propagated from then on.
func (x *callCtx) Done() <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done != nil {
		return x.done
	}
	if x.err != nil || x.ended {
		return closedChan
	}
	if x.parent.Done() != nil {
		if err := x.parent.Err(); err != nil {
			x.cancelLocked(byParent, err)
			return closedChan
		}
		x.done = make(chan struct{}) // never recycled: the parent's AfterFunc may close it
		x.watchParentLocked()
		return x.done
	}
	x.done = x.calls.getChan()
	return x.done
}

// Err reports the call's own cancellation, else the caller's.
func (x *callCtx) Err() error {
	x.mu.Lock()
	err, watching := x.err, x.stop != nil
	x.mu.Unlock()
	if err != nil || watching {
		// While the parent's cancellation is being propagated, Err follows
		// Done: it is not set before Done is closed.
		return err
	}
	return x.parent.Err()
}

// Value returns the caller's values. (context.Cause of a call's context
// is its Err, or the caller's cause once the caller's context has ended.)
func (x *callCtx) Value(key any) any { return x.parent.Value(key) }

// AfterFunc arranges for f to run in its own goroutine once the call is
// cancelled, so that a context derived from the call's needs no goroutine
// to watch it (context.AfterFunc and context.WithCancel use this method).
func (x *callCtx) AfterFunc(f func()) (stop func() bool) {
	a := &afterFunc{f: f}
	x.mu.Lock()
	if x.err != nil || x.ended {
		x.mu.Unlock()
		a.once.Do(func() { go f() })
		return func() bool { return false }
	}
	if x.parent.Done() != nil {
		x.watchParentLocked()
	}
	x.afters = append(x.afters, a)
	x.mu.Unlock()
	return func() bool {
		stopped := false
		a.once.Do(func() { stopped = true })
		return stopped
	}
}

// watchParentLocked propagates the caller's cancellation, once.
func (x *callCtx) watchParentLocked() {
	if x.stop == nil {
		x.stop = context.AfterFunc(x.parent, func() { x.cancel(byParent, x.parent.Err()) })
	}
}

func (x *callCtx) String() string { return "conn.callContext" }

// cancel ends the call's context for reason, with err as its Err, unless
// it was cancelled or ended already.
func (x *callCtx) cancel(reason cancelReason, err error) {
	x.mu.Lock()
	x.cancelLocked(reason, err)
	x.mu.Unlock()
}

func (x *callCtx) cancelLocked(reason cancelReason, err error) {
	if x.err != nil || x.ended {
		return
	}
	x.err, x.reason = err, reason
	if x.done != nil {
		close(x.done)
	}
	x.runAfters()
}

func (x *callCtx) runAfters() {
	for _, a := range x.afters {
		a.once.Do(func() { go a.f() })
	}
	x.afters = nil
}

// finish marks the call as returned. An unused channel goes back to the
// pool; a context that was derived from the call's and is still waiting is
// cancelled, as the deferred cancel of context.WithCancel would.
func (x *callCtx) finish() {
	x.mu.Lock()
	if x.ended {
		x.mu.Unlock()
		return
	}
	var recycle chan struct{}
	if x.err == nil {
		x.err = context.Canceled
		x.runAfters()
		if x.stop == nil {
			recycle = x.done
		} else if x.done != nil {
			close(x.done)
		}
	}
	x.ended = true
	x.done = nil
	stop := x.stop
	x.mu.Unlock()
	if stop != nil {
		stop()
	}
	if recycle != nil {
		x.calls.putChan(recycle)
	}
}
