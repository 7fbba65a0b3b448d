package conntest_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
)

// fakeT is a conntest.T that, like *testing.T, stops the goroutine that
// fails it; fails runs a check on one and returns its failure message.
type fakeT struct{ msg string }

func (*fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fails runs check in a goroutine of its own, as a test runs, and returns
// the message it failed with and whether it failed.
func fails(check func(conntest.T)) (string, bool) {
	f := &fakeT{}
	done := make(chan bool)
	go func() {
		ok := false
		defer func() { done <- !ok }()
		check(f)
		ok = true
	}()
	failed := <-done
	return f.msg, failed
}

// record feeds rec one transition per state, chained from connecting,
// numbering their generations from 1.
func record(rec *conntest.Recorder, states ...conn.State) {
	from := conn.Connecting
	for i, to := range states {
		rec.OnTransition(conn.Transition{From: from, To: to, Generation: uint64(i + 1)})
		from = to
	}
}

func gens(trs []conn.Transition) []uint64 {
	var out []uint64
	for _, t := range trs {
		out = append(out, t.Generation)
	}
	return out
}

// Await returns the first transition into its state, reading those
// before it; a second Await finds the next one, not the same.
func TestAwaitSkipsOtherStates(t *testing.T) {
	rec := conntest.NewRecorder()
	record(rec, conn.FailedRetrying, conn.Connecting, conn.Established, conn.LostReconnecting, conn.Connecting, conn.Established)
	if got := rec.Await(t, time.Second, conn.Established); got.Generation != 3 {
		t.Fatalf("Await(established) = generation %d, want 3", got.Generation)
	}
	if diff := cmp.Diff([]uint64{1, 2, 3}, gens(rec.Seen())); diff != "" {
		t.Errorf("Seen after Await (-want +got):\n%s", diff)
	}
	if got := rec.Await(t, time.Second, conn.Established); got.Generation != 6 {
		t.Fatalf("second Await(established) = generation %d, want 6", got.Generation)
	}
	rec.NoTransition(t)
}

// Next, Expect and Await read from one cursor: what one read, the others
// do not see again, and none skips what another left unread.
func TestAwaitSharesTheCursorOfNextAndExpect(t *testing.T) {
	rec := conntest.NewRecorder()
	record(rec, conn.FailedRetrying, conn.Connecting, conn.FailedRetrying, conn.Connecting, conn.Established, conn.LostReconnecting)
	if got := rec.Next(t, time.Second); got.Generation != 1 {
		t.Fatalf("Next = generation %d, want 1", got.Generation)
	}
	// Connecting is generation 2, right after what Next read.
	if got := rec.Await(t, time.Second, conn.Connecting); got.Generation != 2 {
		t.Fatalf("Await(connecting) after Next = generation %d, want 2", got.Generation)
	}
	// Expect starts right after what Await read.
	got := rec.Expect(t, time.Second, conn.FailedRetrying, conn.Connecting)
	if diff := cmp.Diff([]uint64{3, 4}, gens(got)); diff != "" {
		t.Errorf("Expect after Await (-want +got):\n%s", diff)
	}
	if got := rec.Await(t, time.Second, conn.LostReconnecting); got.Generation != 6 {
		t.Fatalf("Await(lost-reconnecting) = generation %d, want 6", got.Generation)
	}
	if diff := cmp.Diff([]uint64{1, 2, 3, 4, 5, 6}, gens(rec.Seen())); diff != "" {
		t.Errorf("Seen (-want +got):\n%s", diff)
	}
}

// Await wakes for a transition recorded while it waits, long before its
// limit.
func TestAwaitWaitsForALaterTransition(t *testing.T) {
	const limit = 10 * time.Second
	rec := conntest.NewRecorder()
	record(rec, conn.FailedRetrying)
	go func() {
		// Once Await has read the first transition, it waits.
		for len(rec.Seen()) == 0 {
			runtime.Gosched()
		}
		rec.OnTransition(conn.Transition{From: conn.FailedRetrying, To: conn.Connecting, Generation: 2})
		rec.OnTransition(conn.Transition{From: conn.Connecting, To: conn.Established, Generation: 7})
	}()
	start := time.Now()
	if got := rec.Await(t, limit, conn.Established); got.Generation != 7 {
		t.Fatalf("Await = generation %d, want 7", got.Generation)
	}
	if took := time.Since(start); took >= limit {
		t.Fatalf("Await returned after %v: the record did not wake it", took)
	}
}

// An Await that sees no transition into its state fails its T after the
// limit, naming the state and listing every transition with its details.
func TestAwaitFailsListingTheTransitions(t *testing.T) {
	rec := conntest.NewRecorder()
	rec.OnTransition(conn.Transition{From: conn.Connecting, To: conn.FailedRetrying, Event: "attempt-failed", Attempt: 1, MaxAttempts: 3, Generation: 1, Err: errors.New("refused")})
	rec.OnTransition(conn.Transition{From: conn.FailedRetrying, To: conn.Connecting, Event: "backoff-elapsed", Attempt: 1, MaxAttempts: 3, Generation: 2})
	msg, failed := fails(func(tb conntest.T) { rec.Await(tb, 20*time.Millisecond, conn.Established) })
	if !failed {
		t.Fatal("Await without a transition into established did not fail")
	}
	for _, want := range []string{
		"no transition into established within 20ms",
		"connecting -(attempt-failed)-> failed-retrying attempt=1/3 gen=1 err=refused",
		"failed-retrying -(backoff-elapsed)-> connecting attempt=1/3 gen=2 err=<nil>",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("failure message lacks %q:\n%s", want, msg)
		}
	}
}

// Count, All and Dump look at every transition, read or not, and read
// none.
func TestCountAndAllSeeReadAndUnread(t *testing.T) {
	rec := conntest.NewRecorder()
	record(rec, conn.FailedRetrying, conn.Connecting, conn.Established, conn.LostReconnecting, conn.Connecting)
	if got := rec.Count(conn.Connecting); got != 2 {
		t.Errorf("Count(connecting) before reading = %d, want 2", got)
	}
	rec.Await(t, time.Second, conn.Established)
	if got := rec.Count(conn.Connecting); got != 2 {
		t.Errorf("Count(connecting) after reading some = %d, want 2", got)
	}
	if got := rec.Count(conn.Exhausted); got != 0 {
		t.Errorf("Count(exhausted) = %d, want 0", got)
	}
	if diff := cmp.Diff([]uint64{1, 2, 3, 4, 5}, gens(rec.All())); diff != "" {
		t.Errorf("All (-want +got):\n%s", diff)
	}
	if got := strings.Count(rec.Dump(), "\n"); got != 5 {
		t.Errorf("Dump has %d lines, want 5:\n%s", got, rec.Dump())
	}
	// Reading went on where Await stopped: Count moved no cursor.
	if got := rec.Next(t, time.Second); got.Generation != 4 {
		t.Errorf("Next after Count = generation %d, want 4", got.Generation)
	}
}

// stater is a supervisor's State, set by the test, counting its callers.
type stater struct {
	v     atomic.Value
	calls atomic.Int64
}

func (s *stater) State() conn.State {
	s.calls.Add(1)
	return s.v.Load().(conn.State)
}

// AwaitState returns once the supervisor reports the state, checked again
// at each record long before the limit, and reads no transition.
func TestAwaitStateWaitsForTheState(t *testing.T) {
	const limit = 10 * time.Second
	rec := conntest.NewRecorder()
	sup := &stater{}
	sup.v.Store(conn.Connecting)
	rec.OnTransition(conn.Transition{From: conn.FailedRetrying, To: conn.Connecting})
	go func() {
		// Once AwaitState has asked, it waits.
		for sup.calls.Load() == 0 {
			runtime.Gosched()
		}
		// As a supervisor does: the state changes, then the transition
		// is delivered.
		sup.v.Store(conn.Established)
		rec.OnTransition(conn.Transition{From: conn.Connecting, To: conn.Established})
	}()
	start := time.Now()
	rec.AwaitState(t, limit, sup, conn.Established)
	if took := time.Since(start); took >= limit {
		t.Fatalf("AwaitState returned after %v: the record did not wake it", took)
	}
	if n := len(rec.Seen()); n != 0 {
		t.Errorf("AwaitState read %d transitions, want none", n)
	}
}

// AwaitState fails its T after the limit if the supervisor is elsewhere,
// naming both states.
func TestAwaitStateFails(t *testing.T) {
	rec := conntest.NewRecorder()
	record(rec, conn.FailedRetrying)
	sup := &stater{}
	sup.v.Store(conn.FailedRetrying)
	msg, failed := fails(func(tb conntest.T) { rec.AwaitState(tb, 20*time.Millisecond, sup, conn.Established) })
	if !failed {
		t.Fatal("AwaitState for a state the supervisor is not in did not fail")
	}
	for _, want := range []string{"not established within 20ms but failed-retrying", "connecting -()-> failed-retrying"} {
		if !strings.Contains(msg, want) {
			t.Errorf("failure message lacks %q:\n%s", want, msg)
		}
	}
}

// Changed is closed by the next transition or log line, and not before.
func TestChangedAtEachRecord(t *testing.T) {
	rec := conntest.NewRecorder()
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	ch := rec.Changed()
	if closed(ch) {
		t.Fatal("Changed is closed before any record")
	}
	rec.OnTransition(conn.Transition{To: conn.Established})
	if !closed(ch) {
		t.Fatal("a transition did not close Changed")
	}
	ch = rec.Changed()
	if closed(ch) {
		t.Fatal("Changed taken after a record is already closed")
	}
	rec.Logger().Info("hello")
	if !closed(ch) {
		t.Fatal("a log line did not close Changed")
	}
}
