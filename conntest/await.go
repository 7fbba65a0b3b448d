package conntest

import (
	"fmt"
	"strings"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
)

// Await waits up to limit for the next transition into state and returns
// it, reading (and so skipping) every transition before it; it fails tb,
// listing every transition recorded, if none comes. Use it where the path
// to state may vary (a real process, a real network); use Expect where
// the path itself is what the test checks.
func (r *Recorder) Await(tb T, limit time.Duration, state conn.State) conn.Transition {
	tb.Helper()
	var t conn.Transition
	if !r.await(limit, func() bool {
		for len(r.unread) > 0 {
			next := r.unread[0]
			r.unread = r.unread[1:]
			r.seen = append(r.seen, next)
			if next.To == state {
				t = next
				return true
			}
		}
		return false
	}) {
		tb.Fatalf("no transition into %s within %v; transitions:\n%s", state, limit, r.Dump())
	}
	return t
}

// AwaitState waits up to limit until sup reports want, checking again at
// every new record; it fails tb, listing every transition recorded, if sup
// does not get there. It reads no transition: unlike Await, it asks where
// sup is now, not where it went, so it suits a supervisor that may have
// passed through want before the call and is there again, or never left.
// sup is usually the *conn.Supervisor whose transitions r records.
func (r *Recorder) AwaitState(tb T, limit time.Duration, sup interface{ State() conn.State }, want conn.State) {
	tb.Helper()
	// State is called without the recorder's lock: sup may be delivering
	// a transition to r at that moment.
	if !r.wait(limit, func() bool { return sup.State() == want }) {
		tb.Fatalf("not %s within %v but %s; transitions:\n%s", want, limit, sup.State(), r.Dump())
	}
}

// Changed returns a channel closed at the recorder's next record, a
// transition or a log line. Take it before looking at what it announces,
// so no record in between is missed; it suits a goroutine that waits for
// the supervisor to move while also waiting for something else.
func (r *Recorder) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed.C()
}

// All returns every transition recorded so far, read or not, in order.
func (r *Recorder) All() []conn.Transition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append(append([]conn.Transition(nil), r.seen...), r.unread...)
}

// Count returns how many of the transitions recorded so far, read or not,
// went into state.
func (r *Recorder) Count(state conn.State) int {
	n := 0
	for _, t := range r.All() {
		if t.To == state {
			n++
		}
	}
	return n
}

// Dump renders every transition recorded so far, read or not, one per
// line with its attempt, generation and cause, for a failure message.
func (r *Recorder) Dump() string {
	var b strings.Builder
	for _, t := range r.All() {
		fmt.Fprintf(&b, "  %s -(%s)-> %s attempt=%d/%d gen=%d err=%v\n", t.From, t.Event, t.To, t.Attempt, t.MaxAttempts, t.Generation, t.Err)
	}
	return b.String()
}
