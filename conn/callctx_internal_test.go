package conn

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// awaitClosed waits, bounded, for ch: the parent's cancellation reaches a
// call's context through context.AfterFunc, on its own goroutine.
func awaitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: not closed", what)
	}
}

// TestCallContextTimeout: CallTimeout expiring on the generation's timer
// cancels the call's context with DeadlineExceeded, closes its Done
// channel and marks it expired; a later call is untouched.
func TestCallContextTimeout(t *testing.T) {
	clk := clock.NewMock()
	var c calls
	x, ok := c.start(context.Background(), clk, time.Second, time.Time{})
	if !ok {
		t.Fatal("start refused on an open list")
	}
	done := x.Done()
	if done == nil || isDone(done) || x.Err() != nil {
		t.Fatalf("fresh call: Done %v closed %v Err %v", done, isDone(done), x.Err())
	}
	clk.Add(500 * time.Millisecond)
	y, _ := c.start(context.Background(), clk, time.Second, time.Time{})
	clk.Add(500 * time.Millisecond)
	if !isDone(done) || !errors.Is(x.Err(), context.DeadlineExceeded) || !x.expired() {
		t.Fatalf("after CallTimeout: closed %v Err %v expired %v", isDone(done), x.Err(), x.expired())
	}
	if !errors.Is(context.Cause(x), context.DeadlineExceeded) {
		t.Errorf("Cause = %v, want DeadlineExceeded", context.Cause(x))
	}
	if y.Err() != nil || isDone(y.Done()) {
		t.Fatalf("the later call was cancelled early: %v", y.Err())
	}
	clk.Add(500 * time.Millisecond)
	if !y.expired() {
		t.Fatal("the later call did not expire at its own deadline")
	}
	c.end(x)
	c.end(y)
	if !errors.Is(x.Err(), context.DeadlineExceeded) {
		t.Errorf("end changed the error of an expired call to %v", x.Err())
	}
	c.close(true, clk.Now())
}

// TestCallContextShutdown: closing the list with cancel retires every
// call with Canceled (not expired); without cancel it leaves them alone;
// a closed list refuses new calls.
func TestCallContextShutdown(t *testing.T) {
	clk := clock.NewMock()
	var c calls
	x, _ := c.start(context.Background(), clk, time.Minute, time.Time{})
	d := x.Done()
	c.close(false, clk.Now())
	if x.Err() != nil {
		t.Fatalf("close(false) cancelled a call: %v", x.Err())
	}
	if _, ok := c.start(context.Background(), clk, time.Minute, time.Time{}); ok {
		t.Fatal("a closed list accepted a call")
	}
	var c2 calls
	y, _ := c2.start(context.Background(), clk, time.Minute, time.Time{})
	yd := y.Done()
	c2.close(true, clk.Now())
	if !isDone(yd) || !errors.Is(y.Err(), context.Canceled) || y.expired() {
		t.Fatalf("shutdown: closed %v Err %v expired %v", isDone(yd), y.Err(), y.expired())
	}
	c.end(x)
	if !isDone(x.Done()) || !errors.Is(x.Err(), context.Canceled) {
		t.Fatalf("after end: Done closed %v Err %v", isDone(x.Done()), x.Err())
	}
	if isDone(d) {
		t.Fatal("end closed a pooled Done channel instead of reusing it")
	}
}

// TestCallContextShutdownAtDeadline: a shutdown at the instant a call's
// CallTimeout runs out, before the timer fired, retires it as timed out,
// as the timer would have (conn/sim seed 17071).
func TestCallContextShutdownAtDeadline(t *testing.T) {
	clk := clock.NewMock()
	var c calls
	x, _ := c.start(context.Background(), clk, time.Minute, time.Time{})
	y, _ := c.start(context.Background(), clk, 2*time.Minute, time.Time{})
	c.close(true, clk.Now().Add(time.Minute)) // the timers have not run
	if !x.expired() || !errors.Is(x.Err(), context.DeadlineExceeded) {
		t.Errorf("due call: Err %v expired %v, want DeadlineExceeded, expired", x.Err(), x.expired())
	}
	if y.expired() || !errors.Is(y.Err(), context.Canceled) {
		t.Errorf("call not yet due: Err %v expired %v, want Canceled, not expired", y.Err(), y.expired())
	}
	c.end(x)
	c.end(y)
}

// TestCallContextParent: the caller's values, deadline, cancellation and
// cause all reach the call's context.
func TestCallContextParent(t *testing.T) {
	clk := clock.NewMock()
	var c calls
	defer c.close(true, clk.Now())
	type key struct{}
	dl := time.Now().Add(time.Hour)
	parent, cancelDL := context.WithDeadline(context.WithValue(context.Background(), key{}, "v"), dl)
	defer cancelDL()
	parent, cancel := context.WithCancelCause(parent)
	x, _ := c.start(parent, clk, time.Minute, time.Time{})
	if x.Value(key{}) != "v" {
		t.Errorf("Value = %v, want the caller's", x.Value(key{}))
	}
	if d, ok := x.Deadline(); !ok || !d.Equal(dl) {
		t.Errorf("Deadline = %v %v, want the caller's %v", d, ok, dl)
	}
	done := x.Done()
	boom := errors.New("boom")
	cancel(boom)
	awaitClosed(t, done, "Done after the caller's cancel")
	if !errors.Is(x.Err(), context.Canceled) || !errors.Is(context.Cause(x), boom) || x.expired() {
		t.Fatalf("Err %v Cause %v expired %v", x.Err(), context.Cause(x), x.expired())
	}
	c.end(x)

	// A caller's context already cancelled before Done is first asked.
	p2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	y, _ := c.start(p2, clk, time.Minute, time.Time{})
	if !errors.Is(y.Err(), context.Canceled) || !isDone(y.Done()) {
		t.Fatalf("cancelled caller: Err %v", y.Err())
	}
	c.end(y)
}

// TestCallContextChildren: a context derived from a call's is cancelled
// with it, through the AfterFunc method (no watching goroutine), and at
// the latest when the call ends.
func TestCallContextChildren(t *testing.T) {
	clk := clock.NewMock()
	var c calls
	defer c.close(true, clk.Now())
	x, _ := c.start(context.Background(), clk, time.Second, time.Time{})
	child, stop := context.WithCancel(x)
	defer stop()
	ran := make(chan struct{})
	context.AfterFunc(x, func() { close(ran) })
	clk.Add(time.Second)
	awaitClosed(t, child.Done(), "child after CallTimeout")
	awaitClosed(t, ran, "AfterFunc after CallTimeout")
	c.end(x)

	y, _ := c.start(context.Background(), clk, time.Minute, time.Time{})
	child2, stop2 := context.WithCancel(y)
	defer stop2()
	c.end(y)
	awaitClosed(t, child2.Done(), "child after the call ended")

	z, _ := c.start(context.Background(), clk, time.Minute, time.Time{})
	stopped := context.AfterFunc(z, func() { t.Error("a stopped AfterFunc ran") })
	if !stopped() {
		t.Error("stop of a pending AfterFunc returned false")
	}
	c.end(z)
}

// TestCallContextAllocs: a call on a caller's context without a Done
// channel costs one allocation, its context; the Done channel is reused.
func TestCallContextAllocs(t *testing.T) {
	clk := clock.NewMock()
	var c calls
	defer c.close(true, clk.Now())
	ctx := context.Background()
	warm, _ := c.start(ctx, clk, time.Minute, time.Time{})
	_ = warm.Done()
	c.end(warm)
	allocs := testing.AllocsPerRun(1000, func() {
		x, _ := c.start(ctx, clk, time.Minute, time.Time{})
		if isDone(x.Done()) || x.Err() != nil {
			t.Fatal("a fresh call is cancelled")
		}
		c.end(x)
	})
	// sync.Pool may drop its channel at a GC; a rare extra allocation is
	// not a per-call cost.
	if allocs > 1.05 {
		t.Errorf("a call costs %.2f allocations, want 1", allocs)
	}
}

// TestCallTimerNotResetPerCall: calls one after another leave the
// generation's timer armed for the first one's deadline (no runtime timer
// is set per call); a call started after the list emptied still expires
// at its own deadline, when the timer has fired and re-armed for it; and
// a timer that fired on an empty list is armed again by the next call.
func TestCallTimerNotResetPerCall(t *testing.T) {
	clk := clock.NewMock()
	var c calls
	defer c.close(true, clk.Now())
	x, _ := c.start(context.Background(), clk, time.Second, time.Time{})
	armed := armedAt(&c)
	c.end(x)
	clk.Add(600 * time.Millisecond)
	y, _ := c.start(context.Background(), clk, time.Second, time.Time{}) // deadline 1.6 s
	if armedAt(&c) != armed {
		t.Fatalf("the second call re-armed the timer for %v; want it left at %v", armedAt(&c), armed)
	}
	clk.Add(500 * time.Millisecond) // 1.1 s: the timer fired and re-armed for y
	if y.Err() != nil {
		t.Fatalf("the later call was cancelled at 1.1 s, before its deadline: %v", y.Err())
	}
	if got, want := armedAt(&c), y.deadline; !got.Equal(want) {
		t.Fatalf("after firing the timer is armed for %v, want the head's deadline %v", got, want)
	}
	clk.Add(500 * time.Millisecond) // 1.6 s
	if !y.expired() {
		t.Fatal("the later call did not expire at its own deadline")
	}
	c.end(y)
	clk.Add(5 * time.Second) // nothing left: the timer stays idle
	if !armedAt(&c).IsZero() {
		t.Fatalf("with no call the timer is armed for %v", armedAt(&c))
	}
	z, _ := c.start(context.Background(), clk, time.Second, time.Time{})
	clk.Add(time.Second)
	if !z.expired() {
		t.Fatal("a call started after the timer went idle did not expire")
	}
	c.end(z)
}

// armedAt reads when the timer of c fires (zero: not armed).
func armedAt(c *calls) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.timerAt
}

// TestCallThatWaitedExpiresFromItsStart: a call that waited for a slot
// (MaxConcurrentCalls) expires CallTimeout after it started waiting, even
// though calls started after its wait began are ahead of it in the list.
func TestCallThatWaitedExpiresFromItsStart(t *testing.T) {
	clk := clock.NewMock()
	var c calls
	defer c.close(true, clk.Now())
	waited := clk.Now()
	clk.Add(300 * time.Millisecond)
	x, _ := c.start(context.Background(), clk, time.Second, time.Time{}) // deadline 1.3 s
	clk.Add(200 * time.Millisecond)
	y, _ := c.start(context.Background(), clk, time.Second, waited) // waited since 0: deadline 1 s
	clk.Add(499 * time.Millisecond)
	if y.Err() != nil || x.Err() != nil {
		t.Fatalf("at 999 ms: waited %v, other %v; want both running", y.Err(), x.Err())
	}
	clk.Add(time.Millisecond)
	if !y.expired() {
		t.Fatal("the call that waited since 0 did not expire at 1 s")
	}
	if x.Err() != nil {
		t.Fatalf("the call started at 300 ms was cancelled at 1 s: %v", x.Err())
	}
	clk.Add(300 * time.Millisecond)
	if !x.expired() {
		t.Fatal("the call started at 300 ms did not expire at 1.3 s")
	}
	c.end(x)
	c.end(y)
}
