package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Invariant is a named property every run must have. Check reads the
// history so far (h.Now is the simulated time of the check) and returns
// what breaks the property, or nil. A run checks every invariant after
// every step of its schedule, and once more at its end.
type Invariant struct {
	Name  string
	Check func(h *History) error
}

// Invariants are the properties the simulator checks, in the order it
// checks them.
var Invariants = []Invariant{
	{"OneProcessAlive", OneProcessAlive},
	{"NoStalePublish", NoStalePublish},
	{"PublishesCompleteListings", PublishesCompleteListings},
	{"RequestsReturnByDeadline", RequestsReturnByDeadline},
	{"CallsRunAtMostOnce", CallsRunAtMostOnce},
	{"FailedBeforeUpLostAfter", FailedBeforeUpLostAfter},
	{"TraceFollowsTable", TraceFollowsTable},
	{"BudgetBounded", BudgetBounded},
	{"RegistryConverges", RegistryConverges},
	{"NothingRunningAfterClose", NothingRunningAfterClose},
	{"AttemptsGrowWithinOutage", AttemptsGrowWithinOutage},
	{"DelayFollowsPolicy", DelayFollowsPolicy},
	{"NoRepeatedPublish", NoRepeatedPublish},
	{"FailedAndLostWorded", FailedAndLostWorded},
}

// OneProcessAlive: at most one generation's process is alive. No process
// starts while an earlier one has not exited, across the generations of
// one supervisor and across a config reload (the old supervisor's Close
// returns before the new one starts). A process that a Close gave up on
// (it returned ErrIncompleteShutdown, or its context ended) is not
// counted: conn documents that it may outlive its supervisor.
func OneProcessAlive(h *History) error {
	for _, o := range h.Opens {
		if len(o.Alive) > 0 {
			return fmt.Errorf("at %v supervisor %d started process %d while process %v had not exited", o.At, o.Inc, o.Proc, o.Alive)
		}
	}
	return nil
}

// NoStalePublish: no publish from a stale generation. Every swap
// registers the tools of one process, the newest its supervisor started,
// and never of a process conn had already terminated.
func NoStalePublish(h *History) error {
	for _, p := range h.Publishes {
		switch {
		case len(p.Procs) > 1:
			return fmt.Errorf("at %v supervisor %d published the tools of processes %v at once", p.At, p.Inc, p.Procs)
		case len(p.Procs) == 0:
		case p.Procs[0] != p.Newest:
			return fmt.Errorf("at %v supervisor %d published the tools of process %d, but had started process %d since", p.At, p.Inc, p.Procs[0], p.Newest)
		case p.Killed:
			return fmt.Errorf("at %v supervisor %d published the tools of process %d, which it had terminated", p.At, p.Inc, p.Procs[0])
		}
	}
	return nil
}

// PublishesCompleteListings: a listing is published only once it is
// complete. Every swap's tools are exactly those of a tools/list the
// process answered to its last page.
func PublishesCompleteListings(h *History) error {
	for _, p := range h.Publishes {
		if len(p.Procs) != 1 {
			continue
		}
		if !slices.ContainsFunc(p.Complete, func(l []string) bool { return slices.Equal(l, p.Tools) }) {
			return fmt.Errorf("at %v supervisor %d published %v of process %d, which is no complete listing of it (complete: %v)", p.At, p.Inc, p.Tools, p.Procs[0], p.Complete)
		}
	}
	return nil
}

// RequestsReturnByDeadline: every call returns once, by its deadline
// (simulated time), with a result or an error in the documented set. A
// tool call's deadline is its context's, or else what CallTimeout allows
// (with HoldCalls, the held wait and one more CallTimeout); a
// Reconnect's is its context's. A tool call returns its tool's result, a
// tool error, or an error matching conn.ErrUnavailable or
// context.DeadlineExceeded, a JSON-RPC error of the server, or the
// registry's "no tool named"; a Reconnect returns nil, a
// *conn.FailedError, or an error matching conn.ErrClosed,
// conn.ErrStillRunning or context.DeadlineExceeded.
func RequestsReturnByDeadline(h *History) error {
	for _, c := range h.Calls {
		what := fmt.Sprintf("%s %s", c.Kind, c.ID)
		if c.Tool != "" {
			what += " of " + c.Tool
		}
		tool := c.Kind == "call" || c.Kind == "call-kept"
		switch {
		case c.Returns == 0 && c.Bound > 0 && h.Now > c.Bound:
			return fmt.Errorf("%s (started at %v) had not returned at %v, past its deadline %v", what, c.Start, h.Now, c.Bound)
		case c.Returns == 0 && h.Final:
			return fmt.Errorf("%s (started at %v) never returned", what, c.Start)
		case c.Returns == 0:
		case c.Returns > 1:
			return fmt.Errorf("%s returned %d times", what, c.Returns)
		case c.Bound > 0 && c.End > c.Bound:
			return fmt.Errorf("%s (started at %v) returned at %v, past its deadline %v: %v", what, c.Start, c.End, c.Bound, c.Err)
		case !documented(c.Kind, c.Err):
			return fmt.Errorf("%s returned an error outside the documented set: %v", what, c.Err)
		case tool && c.Err == nil && !c.IsError && !strings.HasPrefix(c.Text, c.Tool+" ok"):
			return fmt.Errorf("%s got another tool's answer: %q", what, c.Text)
		}
	}
	return nil
}

// documented reports whether err is in the documented set of a request
// of kind.
func documented(kind string, err error) bool {
	if err == nil {
		return true
	}
	var rpc *jsonrpc.Error
	var ferr *conn.FailedError
	switch kind {
	case "call", "call-kept":
		return errors.Is(err, conn.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) ||
			errors.As(err, &rpc) || strings.HasPrefix(err.Error(), "conn: no tool named ")
	case "reconnect":
		return errors.As(err, &ferr) || errors.Is(err, conn.ErrClosed) ||
			errors.Is(err, conn.ErrStillRunning) || errors.Is(err, context.DeadlineExceeded)
	case "subscribe", "unsubscribe":
		return errors.Is(err, conn.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &rpc)
	}
	return false // roots: a valid SetRoots never fails
}

// CallsRunAtMostOnce: a tool not annotated safe to repeat runs at most
// once per call, whatever HoldCalls does; a read-only or idempotent one
// at most twice with RetryIdempotent (the call, and its one resend).
func CallsRunAtMostOnce(h *History) error {
	for _, c := range h.Calls {
		if n := h.Execs[c.ID]; n > c.Repeat {
			return fmt.Errorf("call %s of %s ran %d times on the server (at most %d allowed)", c.ID, c.Tool, n, c.Repeat)
		}
	}
	return nil
}

// FailedBeforeUpLostAfter: failed-* only from connecting, lost-* only
// from established. A transition into a failed state comes from
// connecting by attempt-failed with a *conn.FailedError whose generation
// never came up; into a lost state from established by connection-lost
// with a *conn.LostError of a generation that was established. A
// failure before the connection came up is never called lost.
func FailedBeforeUpLostAfter(h *History) error {
	up := map[[2]uint64]bool{} // (incarnation, generation) established
	for _, m := range h.Transitions {
		key := [2]uint64{uint64(m.Inc), m.Generation}
		if m.To == conn.Established {
			up[key] = true
		}
		var ferr *conn.FailedError
		var lerr *conn.LostError
		switch {
		case m.To.Failed() && (m.From != conn.Connecting || m.Event != conn.EventAttemptFailed):
			return fmt.Errorf("at %v supervisor %d entered %s from %s by %s", m.At, m.Inc, m.To, m.From, m.Event)
		case m.To.Lost() && (m.From != conn.Established || m.Event != conn.EventConnectionLost):
			return fmt.Errorf("at %v supervisor %d entered %s from %s by %s", m.At, m.Inc, m.To, m.From, m.Event)
		case m.To.Failed() && !errors.As(m.Err, &ferr):
			return fmt.Errorf("at %v supervisor %d entered %s with %v, not a *conn.FailedError", m.At, m.Inc, m.To, m.Err)
		case m.To.Lost() && !errors.As(m.Err, &lerr):
			return fmt.Errorf("at %v supervisor %d entered %s with %v, not a *conn.LostError", m.At, m.Inc, m.To, m.Err)
		}
		if errors.As(m.Err, &lerr) && !up[[2]uint64{uint64(m.Inc), lerr.Generation}] {
			return fmt.Errorf("at %v supervisor %d called generation %d lost, which never came up: %v", m.At, m.Inc, lerr.Generation, m.Err)
		}
		if errors.As(m.Err, &ferr) && up[[2]uint64{uint64(m.Inc), ferr.Generation}] {
			return fmt.Errorf("at %v supervisor %d called generation %d failed, which had come up: %v", m.At, m.Inc, ferr.Generation, m.Err)
		}
	}
	return nil
}

// TraceFollowsTable: every transition is an edge of the declared table.
// Each supervisor's trace passes fsm/trace's Check against conn.Table()
// (every step an edge, with its guard, continuing from the step before,
// the first from connecting), and conn never logged that one of its
// machines rejected an event.
func TraceFollowsTable(h *History) error {
	if len(h.Bugs) > 0 {
		return fmt.Errorf("conn reported a bug of its own: %s", h.Bugs[0])
	}
	return h.checkTrace()
}

// BudgetBounded: attempts stay within the budget. No transition counts
// an attempt beyond its supervisor's MaxAttempts, and exhausted comes
// exactly at MaxAttempts.
func BudgetBounded(h *History) error {
	for _, m := range h.Transitions {
		max := h.Setups[m.Inc-1].MaxAttempts
		switch {
		case m.Attempt > max:
			return fmt.Errorf("at %v supervisor %d counts attempt %d of %d (%s -> %s)", m.At, m.Inc, m.Attempt, max, m.From, m.To)
		case m.To == conn.Exhausted && m.Attempt != max:
			return fmt.Errorf("at %v supervisor %d gave up after %d of %d attempts", m.At, m.Inc, m.Attempt, max)
		}
	}
	return nil
}

// RegistryConverges: once the server is stable, the registry equals its
// last listing. After the world has been calm long enough (every fault
// over, every later process healthy, a stopped supervisor reconnected),
// the supervisor is established, its registered tools are the server's
// tool list, definitions included, all from the newest live process, and
// that process has the supervisor's resource subscriptions (and none it
// ended); with a Catalog, the catalog holds the server's resources and
// prompts.
func RegistryConverges(h *History) error {
	for _, c := range h.Calms {
		switch {
		case c.Inc == 0:
		case c.State != conn.Established:
			return fmt.Errorf("at %v, calm for a while, supervisor %d is %s, not established", c.At, c.Inc, c.State)
		case c.Deaf:
			// The server no longer tells of changes (a go-sdk v1.8.0
			// server bug): nothing can converge but by chance.
		case !slices.Equal(c.Tools, c.Listed):
			return fmt.Errorf("at %v, calm for a while, supervisor %d registered %v; the server lists %v", c.At, c.Inc, c.Tools, c.Listed)
		case len(c.Tools) > 0 && !slices.Equal(c.Procs, []int{c.Live}):
			return fmt.Errorf("at %v, calm for a while, supervisor %d registered tools of processes %v; the live one is %d", c.At, c.Inc, c.Procs, c.Live)
		case c.Catalog && !slices.Equal(c.Listing, catalogListing()):
			return fmt.Errorf("at %v, calm for a while, supervisor %d's catalog holds %v; the server lists %v", c.At, c.Inc, c.Listing, catalogListing())
		}
		owed, stale := h.subscriptions(c)
		for _, uri := range owed {
			if !slices.Contains(c.Served, uri) {
				return fmt.Errorf("at %v, calm for a while, supervisor %d is subscribed to %s, but its live process %d (protocol %s) does not have the subscription (it has %v)", c.At, c.Inc, uri, c.Live, c.Protocol, c.Served)
			}
		}
		for _, uri := range stale {
			if slices.Contains(c.Served, uri) {
				return fmt.Errorf("at %v, calm for a while, supervisor %d unsubscribed from %s, but its live process %d (protocol %s) still has the subscription", c.At, c.Inc, uri, c.Live, c.Protocol)
			}
		}
	}
	return nil
}

// subscriptions returns the subscriptions the live process of a calm must
// have (owed) and must not have (stale). A subscription made before the
// process started is owed (a new generation gets them all), and so is one
// made since that succeeded or found no generation up (conn keeps it and
// sends it when the server is back); the same for an ended one. A change
// that the live session answered with an error, or that timed out there,
// owes nothing either way.
func (h *History) subscriptions(c Calm) (owed, stale []string) {
	var opened time.Duration = -1
	for _, o := range h.Opens {
		if o.Proc == c.Live {
			opened = o.At
		}
	}
	last := map[string]*Call{}
	for _, call := range h.Calls {
		if (call.Kind == "subscribe" || call.Kind == "unsubscribe") && call.Inc == c.Inc && call.Returns > 0 && call.End <= c.At {
			last[call.Tool] = call
		}
	}
	for uri, call := range last {
		if call.End >= opened && call.Err != nil && !errors.Is(call.Err, conn.ErrUnavailable) {
			continue
		}
		if slices.Contains(c.Subs, uri) {
			owed = append(owed, uri)
		} else {
			stale = append(stale, uri)
		}
	}
	slices.Sort(owed)
	slices.Sort(stale)
	return owed, stale
}

// NothingRunningAfterClose: after Close, nothing running. A Close that
// returns nil leaves no process of its supervisor alive, none of its
// tools registered and nothing of it in the catalog, the supervisor
// disposed, and no goroutine or timer
// behind: once the run has ended every process and waited out every
// timer, nothing of the run is left. A Close that returns an error does
// so only with conn.ErrIncompleteShutdown or its context's error, and
// only when a process of its supervisor outlived its termination by
// CloseTimeout or more.
func NothingRunningAfterClose(h *History) error {
	if len(h.Leaks) > 0 {
		return fmt.Errorf("left behind once everything was closed: %s", strings.Join(h.Leaks, "; "))
	}
	for _, c := range h.Closes {
		switch {
		case c.Err == nil && len(c.Alive) > 0:
			return fmt.Errorf("at %v Close of supervisor %d returned nil, but its process %v is alive", c.At, c.Inc, c.Alive)
		case c.Err == nil && len(c.Tools) > 0:
			return fmt.Errorf("at %v Close of supervisor %d returned nil, but its tools %v are registered", c.At, c.Inc, c.Tools)
		case c.Err == nil && len(c.Listed) > 0:
			return fmt.Errorf("at %v Close of supervisor %d returned nil, but the catalog still holds its %v", c.At, c.Inc, c.Listed)
		case c.Err == nil && c.State != conn.Disposed:
			return fmt.Errorf("at %v Close of supervisor %d returned nil in state %s", c.At, c.Inc, c.State)
		case c.Err != nil && !errors.Is(c.Err, conn.ErrIncompleteShutdown) && !errors.Is(c.Err, context.DeadlineExceeded):
			return fmt.Errorf("at %v Close of supervisor %d returned an undocumented error: %v", c.At, c.Inc, c.Err)
		case c.Err != nil && !h.outlived(c.Inc):
			return fmt.Errorf("at %v Close of supervisor %d returned %v, but no process of it outlived CloseTimeout", c.At, c.Inc, c.Err)
		}
	}
	return nil
}

// outlived reports whether a process of supervisor inc was slower to exit
// than the supervisor's CloseTimeout allows.
func (h *History) outlived(inc int) bool {
	limit := h.Setups[inc-1].CloseTimeout
	for _, o := range h.Opens {
		if o.Inc != inc || o.Proc > len(h.procs) {
			continue
		}
		if d := h.procs[o.Proc-1].ExitDelay; d == Never || d >= limit {
			return true
		}
	}
	return false
}

// catalogListing is what every process serves besides tools, as the
// catalog of a supervisor lists it: resource URIs and prompt names, sorted.
func catalogListing() []string {
	out := append(slices.Clone(resourceURIs), promptNames...)
	slices.Sort(out)
	return out
}

// check runs every invariant on h and returns the first that breaks.
func check(h *History) *Violation {
	for _, inv := range Invariants {
		if err := inv.Check(h); err != nil {
			return &Violation{Invariant: inv.Name, Err: err}
		}
	}
	return nil
}
