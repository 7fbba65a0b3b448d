package fsm

import (
	"errors"
	"strconv"
	"strings"
)

// ErrInvalidSpec is matched (via errors.Is) by every error that [Spec.Validate]
// and [New] return for a malformed table or options.
var ErrInvalidSpec = errors.New("invalid spec")

// ErrInvalidEvent is matched (via errors.Is) by every [*EventError]: the event
// is not permitted in the machine's current state.
var ErrInvalidEvent = errors.New("event not permitted")

// SpecError reports one offending entry of a [Spec] (or of the [Options]
// passed to [New]). It matches errors.Is(err, ErrInvalidSpec).
type SpecError struct {
	Spec   string // Spec.Name, possibly empty when that is the problem
	Entry  string // the offending entry, e.g. `Transitions[2]` or `States[0] "idle"`
	Reason string // what is wrong and how to fix it
}

// Error implements error.
func (e *SpecError) Error() string {
	return "fsm: invalid spec " + quote(e.Spec) + ": " + e.Entry + ": " + e.Reason
}

// Is reports whether target is [ErrInvalidSpec].
func (e *SpecError) Is(target error) bool { return target == ErrInvalidSpec }

// EventError reports an event that is not permitted in the machine's current
// state: no transition for it leaves the state, or every such transition
// is guarded and no guard accepted the event's data. It matches
// errors.Is(err, ErrInvalidEvent).
type EventError struct {
	Machine   string   // Spec.Name of the machine
	Event     string   // the rejected event
	State     string   // the state the machine was in
	Permitted []string // events permitted in State, sorted
	// Guards lists, in order, the conditions (When) of the transitions
	// whose guards all rejected the data; empty when the event has no
	// transition from State.
	Guards []string
}

// Error implements error. The message lists the events that would have been
// accepted, or the guards that refused, because that is what a caller
// needs to fix the call site.
func (e *EventError) Error() string {
	var b strings.Builder
	b.WriteString("fsm ")
	b.WriteString(quote(e.Machine))
	b.WriteString(": event ")
	b.WriteString(e.Event)
	if len(e.Guards) > 0 {
		b.WriteString(" in state " + e.State + ": no guard accepted its data (tried: " + strings.Join(e.Guards, ", ") + ")")
		return b.String()
	}
	b.WriteString(" is not permitted in state ")
	b.WriteString(e.State)
	b.WriteString(" (permitted: ")
	if len(e.Permitted) == 0 {
		b.WriteString("none")
	} else {
		b.WriteString(strings.Join(e.Permitted, ", "))
	}
	b.WriteString(")")
	return b.String()
}

// Is reports whether target is [ErrInvalidEvent].
func (e *EventError) Is(target error) bool { return target == ErrInvalidEvent }

func quote(s string) string { return strconv.Quote(s) }
