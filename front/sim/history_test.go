package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// History is what a run observed, in simulated time since its start:
// what each client saw, each per-client instance's life and each
// request's. The invariants read it; a test builds one by hand to show an
// invariant failing.
type History struct {
	// Now is the simulated time of the check.
	Now time.Duration
	// Idle is the front's Options.InstanceIdle; Slack, how late a timer
	// of the front may act and still be on time (the driver's step).
	Idle, Slack time.Duration
	// Clients are the simulated clients, by name (also their subject).
	Clients map[string]*ClientRec
	// Sightings are the things of a client's that a client saw.
	Sightings []Sighting
	// Instances are the per-client instances the front started.
	Instances []*InstanceRec
	// Requests are the requests the clients made.
	Requests []*RequestRec
	// Stalled holds the goroutines' stacks when the run stopped making
	// progress: every goroutine blocked, none on time or a channel.
	Stalled string
	// Leaks are the goroutines of the run left once the front, its
	// clients and its backends were all closed and every timer fired.
	Leaks []string
}

// ClientRec is one simulated client.
type ClientRec struct {
	Name   string
	Modern bool // a 2026-07-28 client, else a 2025-11-25 session
	// Ended is when the client ended: it closed its session, or the front
	// was entitled to end it (it sent nothing for the session timeout).
	// Negative while it lives.
	Ended time.Duration
}

// Sighting is one thing a client saw or answered, and whose it was.
type Sighting struct {
	At     time.Duration
	Client string // who saw it
	Owner  string // whose it was
	What   string // "elicitation", "roots", "result" or "answer"
	Detail string
}

// InstanceRec is one per-client instance: a supervisor the front had
// Backends.StartInstance start for a client.
type InstanceRec struct {
	ID      int
	Server  string
	Owner   string // the subject the front started it for
	Started time.Duration
	Closed  time.Duration // negative while it runs
	// Served are the clients whose requests reached its server, with the
	// time of the last.
	Served map[string]time.Duration
	// Active counts the requests its server is serving now: a call that
	// waits for its client's answer holds the instance.
	Active int
}

// RequestRec is one request of a client to the front.
type RequestRec struct {
	ID       int
	Client   string
	What     string
	Start    time.Duration
	Deadline time.Duration
	End      time.Duration // negative while in flight
	// Closing says its client closed its session while it was in flight:
	// go-sdk's client then returns it only once the session's DELETE is
	// answered, and go-sdk's server answers that DELETE once every
	// request of the session has ended on the backend, whatever its
	// deadline (see RequestsEndByDeadline).
	Closing bool
	// Backend is when a backend last served the request (its call began
	// or ended there), zero if none did; AtBackend says a backend serves
	// it now. A bridged call runs on past the round trip that started
	// it, and the front counts a 2026-07-28 client's requests as its
	// activity until they end there.
	Backend   time.Duration
	AtBackend bool
}

// Violation is an invariant a history breaks.
type Violation struct {
	Invariant string
	Detail    string
}

func (v Violation) String() string { return v.Invariant + ": " + v.Detail }

func fmtD(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

// Canonical is log with the lines of each simulated instant sorted: the
// goroutines that act at one instant may log in any order.
func Canonical(log []string) []string {
	out := slices.Clone(log)
	for i := 0; i < len(out); {
		at, _, _ := strings.Cut(out[i], " ")
		j := i + 1
		for j < len(out) && strings.HasPrefix(out[j], at+" ") {
			j++
		}
		slices.Sort(out[i:j])
		i = j
	}
	return out
}
