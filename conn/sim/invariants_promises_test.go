package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
)

// The invariants of what the design promises about the outage budget,
// the backoff schedule, publishing and wording (issue 42); see
// docs/reliability.md for the bug class each catches.

// AttemptsGrowWithinOutage: within one outage the attempt count only
// grows. Each failure or loss that grants a retry counts one attempt more
// than the one before it in the supervisor's outage, and none counts fewer,
// unless the outage ended in between: a connection that stayed up for the
// stability window (the policy's MaxDelay, measured here up to the loss's
// transition, which is no earlier than the last-known-good time the budget
// uses), a Reconnect, or a probe that succeeded. It catches a budget
// laundered by a connect (a reset on every connect, an Up that zeroes the
// attempts, a loss dated later than its last-known-good time, which it
// sees as a too-long uptime only when the dating stretches it past the
// window). A Reconnect or a probe that succeeded starts a fresh budget:
// the next failure counts attempt 1, which catches a probe or a Reconnect
// that does not reset.
func AttemptsGrowWithinOutage(h *History) error {
	type outage struct {
		prev    int    // attempts counted by the last charge
		upAt    int64  // when the last established began (ns since start); -1 when down
		probing bool   // the attempt in flight was a probe
		ended   bool   // the outage may have ended since the last charge
		fresh   bool   // it did (a Reconnect, a probe that succeeded): the next charge counts attempt 1
		why     string // how it ended
		last    Move
	}
	sups := map[int]*outage{}
	for _, m := range h.Transitions {
		o := sups[m.Inc]
		if o == nil {
			o = &outage{upAt: -1}
			sups[m.Inc] = o
		}
		window := h.Setups[m.Inc-1].MaxDelay
		switch {
		case m.Event == conn.EventReconnect:
			o.ended, o.fresh, o.why = true, true, "a Reconnect"
		case m.Event == conn.EventProbe:
			o.probing = true
		case m.To == conn.Established:
			o.upAt = int64(m.At)
			if o.probing {
				o.ended, o.fresh, o.why = true, true, "a probe that succeeded"
			}
			o.probing = false
		}
		if m.Event != conn.EventAttemptFailed && m.Event != conn.EventConnectionLost {
			continue
		}
		if m.Event == conn.EventConnectionLost && o.upAt >= 0 && int64(m.At)-o.upAt >= int64(window) {
			o.ended, o.why = true, "an uptime of the stability window"
		}
		o.upAt, o.probing = -1, false
		counted := m.To == conn.FailedRetrying || m.To == conn.LostReconnecting || m.To == conn.Exhausted
		if !counted {
			continue
		}
		retry := m.To != conn.Exhausted
		if o.fresh && (!retry || m.Attempt != 1) {
			return fmt.Errorf("at %v supervisor %d counts attempt %d/%d (%s -> %s), the first failure after %s, which starts a fresh budget (attempt 1)",
				m.At, m.Inc, m.Attempt, m.MaxAttempts, m.From, m.To, o.why)
		}
		if !o.ended && (m.Attempt < o.prev || retry && m.Attempt <= o.prev) {
			return fmt.Errorf("at %v supervisor %d counts attempt %d/%d (%s -> %s), after attempt %d of the same outage (%s -> %s at %v), and no stability window, Reconnect or successful probe came between",
				m.At, m.Inc, m.Attempt, m.MaxAttempts, m.From, m.To, o.prev, o.last.From, o.last.To, o.last.At)
		}
		o.prev, o.ended, o.fresh, o.last = m.Attempt, false, false, m
	}
	return nil
}

// DelayFollowsPolicy: each retry waits what the policy says. A transition
// that grants a retry (into failed-retrying or lost-reconnecting) waits
// the policy's Delay for its attempt (the simulator runs without jitter,
// so exactly), raised only to a server's Retry-After (at most
// conn.MaxRetryAfter), and never more than MaxDelay otherwise. It catches
// a backoff cap not applied, a schedule off by one attempt, and a delay
// that ignores the budget's decision.
func DelayFollowsPolicy(h *History) error {
	for _, m := range h.Transitions {
		if m.To != conn.FailedRetrying && m.To != conn.LostReconnecting {
			continue
		}
		s := h.Setups[m.Inc-1]
		want := backoff(s, m.Attempt)
		var he *conn.HTTPError
		if errors.As(m.Err, &he) && he.RetryAfter > want {
			want = min(he.RetryAfter, conn.MaxRetryAfter)
		}
		switch {
		case m.Delay != want:
			return fmt.Errorf("at %v supervisor %d waits %v before attempt %d/%d (%s -> %s); its policy (%v..%v) says %v", m.At, m.Inc, m.Delay, m.Attempt, m.MaxAttempts, m.From, m.To, s.InitialDelay, s.MaxDelay, want)
		case m.Delay > s.MaxDelay && want <= s.MaxDelay:
			return fmt.Errorf("at %v supervisor %d waits %v, above MaxDelay %v", m.At, m.Inc, m.Delay, s.MaxDelay)
		}
	}
	return nil
}

// backoff is the delay before retry n (from 1) of s's policy, worked out
// here rather than asked of package policy, so that a bug there is seen:
// InitialDelay doubled per retry, capped at MaxDelay.
func backoff(s Setup, n int) time.Duration {
	d := s.InitialDelay
	for i := 1; i < n && d < s.MaxDelay; i++ {
		d *= 2
	}
	return min(d, s.MaxDelay)
}

// NoRepeatedPublish: no swap publishes what the one before it did. Two
// swaps of a supervisor in a row with the same tools from the same process
// tell every listener of a change that is none. It catches a re-sync that
// republishes an unchanged list. (Registries without Replace are left
// out: they record one registration at a time.)
func NoRepeatedPublish(h *History) error {
	last := map[int]*Publish{}
	for i := range h.Publishes {
		p := &h.Publishes[i]
		if h.Setups[p.Inc-1].Plain {
			continue
		}
		if q := last[p.Inc]; q != nil && slices.Equal(q.Tools, p.Tools) && slices.Equal(q.Procs, p.Procs) {
			return fmt.Errorf("at %v supervisor %d published %v from process %v again, as it did at %v", p.At, p.Inc, p.Tools, p.Procs, q.At)
		}
		last[p.Inc] = p
	}
	return nil
}

// FailedAndLostWorded: a failure is called a failure and a loss a loss,
// in the status and in the log alike. The error of every transition into
// a failed-* state (what Status.LastErr then holds) says "connection
// failed" and not "connection lost", and the reverse for a lost-* state;
// and so does the message of its log line. It catches a failed retry
// reported as "connection lost" (or the reverse) whatever the error's
// type.
func FailedAndLostWorded(h *History) error {
	word := func(st conn.State) (want, not string, ok bool) {
		switch {
		case st.Failed():
			return "connection failed", "connection lost", true
		case st.Lost():
			return "connection lost", "connection failed", true
		}
		return "", "", false
	}
	for _, m := range h.Transitions {
		want, not, ok := word(m.To)
		if !ok || m.Err == nil {
			continue
		}
		if msg := m.Err.Error(); !strings.Contains(msg, want) || strings.Contains(msg, not) {
			return fmt.Errorf("at %v supervisor %d entered %s with the status error %q, which should say %q", m.At, m.Inc, m.To, msg, want)
		}
	}
	for _, l := range h.Logged {
		want, not, ok := word(l.State)
		if !ok {
			continue
		}
		if !strings.Contains(l.Msg, want) || strings.Contains(l.Msg, not) {
			return fmt.Errorf("at %v supervisor %d logged its move into %s as %q, which should say %q", l.At, l.Inc, l.State, l.Msg, want)
		}
	}
	return nil
}
