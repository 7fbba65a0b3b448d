package sim_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conn/sim"
)

// The invariants of the design's promises, each shown breaking on the
// history its bug leaves (a history as the simulator records it), and
// holding on the history the unmutated code leaves. The commit that added
// them also ran the simulator on conn with each bug planted by hand.

const ms = time.Millisecond

// move is a transition of supervisor 1 at at.
func move(at time.Duration, from conn.State, ev conn.Event, to conn.State, attempt int, delay time.Duration, err error) sim.Move {
	return sim.Move{Inc: 1, At: at, Transition: conn.Transition{From: from, Event: ev, To: to, Attempt: attempt, MaxAttempts: 3, Delay: delay, Err: err}}
}

var (
	lostErr   = &conn.LostError{Server: "sim", Generation: 1, Err: errors.New("EOF")}
	failedErr = &conn.FailedError{Server: "sim", Generation: 2, Err: errors.New("refused")}
	setups    = []sim.Setup{{InitialDelay: 100 * ms, MaxDelay: time.Second, MaxAttempts: 3}}
)

// outage is an outage of supervisor 1: up at 0, lost, a retry that comes
// up, and lost again at second (attempt counted second), then exhausted
// and a probe that comes up and is lost once more (attempt counted
// third).
func outage(second time.Duration, secondAttempt, thirdAttempt int) []sim.Move {
	return []sim.Move{
		move(0, conn.Connecting, conn.EventConnected, conn.Established, 0, 0, nil),
		move(500*ms, conn.Established, conn.EventConnectionLost, conn.LostReconnecting, 1, 100*ms, lostErr),
		move(600*ms, conn.LostReconnecting, conn.EventBackoffElapsed, conn.Connecting, 1, 0, nil),
		move(700*ms, conn.Connecting, conn.EventConnected, conn.Established, 1, 0, nil),
		move(second, conn.Established, conn.EventConnectionLost, conn.LostReconnecting, secondAttempt, 100*ms<<(secondAttempt-1), lostErr),
		move(second+ms, conn.LostReconnecting, conn.EventBackoffElapsed, conn.Connecting, secondAttempt, 0, nil),
		move(second+2*ms, conn.Connecting, conn.EventAttemptFailed, conn.FailedRetrying, 3, 400*ms, failedErr),
		move(second+3*ms, conn.FailedRetrying, conn.EventBackoffElapsed, conn.Connecting, 3, 0, nil),
		move(second+4*ms, conn.Connecting, conn.EventAttemptFailed, conn.Exhausted, 3, 0, failedErr),
		move(second+5*ms, conn.Exhausted, conn.EventProbe, conn.Connecting, 0, 0, nil),
		move(second+6*ms, conn.Connecting, conn.EventConnected, conn.Established, 0, 0, nil),
		move(second+7*ms, conn.Established, conn.EventConnectionLost, conn.LostReconnecting, thirdAttempt, 100*ms<<(thirdAttempt-1), lostErr),
	}
}

func TestAttemptsGrowWithinOutage(t *testing.T) {
	for _, c := range []struct {
		name  string
		moves []sim.Move
		want  string // "" for no violation
	}{
		{"unmutated", outage(900*ms, 2, 1), ""},
		{"up for the stability window", outage(1700*ms, 1, 1), ""},
		// Budget.Up zeroes the attempts (or a reset on every connect).
		{"laundered by a connect", outage(900*ms, 1, 1), "after attempt 1 of the same outage"},
		// The probe that came up did not reset the budget: the next loss
		// is exhausted at once.
		{"probe does not reset", append(outage(900*ms, 2, 1)[:11],
			move(907*ms, conn.Established, conn.EventConnectionLost, conn.Exhausted, 3, 0, lostErr)), "starts a fresh budget"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := sim.AttemptsGrowWithinOutage(&sim.History{Setups: setups, Transitions: c.moves})
			check(t, err, c.want)
		})
	}
}

func TestDelayFollowsPolicy(t *testing.T) {
	busy := &conn.HTTPError{StatusCode: 503, RetryAfter: 30 * time.Second}
	for _, c := range []struct {
		name string
		m    sim.Move
		want string
	}{
		{"first", move(0, conn.Established, conn.EventConnectionLost, conn.LostReconnecting, 1, 100*ms, lostErr), ""},
		{"capped", move(0, conn.Connecting, conn.EventAttemptFailed, conn.FailedRetrying, 5, time.Second, failedErr), ""},
		{"retry-after", move(0, conn.Connecting, conn.EventAttemptFailed, conn.FailedRetrying, 1, 30*time.Second,
			&conn.FailedError{Server: "sim", Err: busy}), ""},
		// The backoff cap not applied: 100ms<<4.
		{"cap not applied", move(0, conn.Connecting, conn.EventAttemptFailed, conn.FailedRetrying, 5, 1600*ms, failedErr), "its policy (100ms..1s) says 1s"},
		{"off by one attempt", move(0, conn.Connecting, conn.EventAttemptFailed, conn.FailedRetrying, 2, 100*ms, failedErr), "says 200ms"},
	} {
		t.Run(c.name, func(t *testing.T) {
			check(t, sim.DelayFollowsPolicy(&sim.History{Setups: setups, Transitions: []sim.Move{c.m}}), c.want)
		})
	}
}

func TestNoRepeatedPublish(t *testing.T) {
	pub := func(at time.Duration, proc int, tools ...string) sim.Publish {
		return sim.Publish{At: at, Inc: 1, Tools: tools, Procs: []int{proc}}
	}
	for _, c := range []struct {
		name string
		pubs []sim.Publish
		want string
	}{
		{"changed", []sim.Publish{pub(0, 1, "t0=t0 v1"), pub(ms, 1, "t0=t0 v2")}, ""},
		{"new process", []sim.Publish{pub(0, 1, "t0=t0 v1"), pub(ms, 2, "t0=t0 v1")}, ""},
		// A re-sync that republishes an unchanged list.
		{"unchanged", []sim.Publish{pub(0, 1, "t0=t0 v1"), pub(ms, 1, "t0=t0 v1")}, "again"},
	} {
		t.Run(c.name, func(t *testing.T) {
			check(t, sim.NoRepeatedPublish(&sim.History{Setups: setups, Publishes: c.pubs}), c.want)
		})
	}
}

func TestFailedAndLostWorded(t *testing.T) {
	failed := move(0, conn.Connecting, conn.EventAttemptFailed, conn.FailedRetrying, 1, 100*ms, failedErr)
	for _, c := range []struct {
		name string
		h    sim.History
		want string
	}{
		{"unmutated", sim.History{Transitions: []sim.Move{failed},
			Logged: []sim.Logged{{Inc: 1, State: conn.FailedRetrying, Msg: "connection failed; retrying in 100ms (attempt 1/3)"}}}, ""},
		// A failed retry logged as "connection lost".
		{"log says lost", sim.History{Transitions: []sim.Move{failed},
			Logged: []sim.Logged{{Inc: 1, State: conn.FailedRetrying, Msg: "connection lost; retrying in 100ms (attempt 1/3)"}}}, "logged its move into failed-retrying"},
		// A failure whose error (Status.LastErr) says lost.
		{"status says lost", sim.History{Transitions: []sim.Move{
			move(0, conn.Connecting, conn.EventAttemptFailed, conn.FailedRetrying, 1, 100*ms, lostErr)}}, "status error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := c.h
			check(t, sim.FailedAndLostWorded(&h), c.want)
		})
	}
}

// check fails t unless err is nil (want "") or says want.
func check(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("violation %v, want none", err)
	case want != "" && err == nil:
		t.Errorf("no violation, want one saying %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("violation %v, want one saying %q", err, want)
	}
}
