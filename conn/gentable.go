package conn

import (
	"fmt"

	"github.com/mcpfsm/mcpfsm/fsm"
)

// GenState is a state of a generation's lifecycle ([GenerationTable]).
type GenState string

// The states of the generation machine.
const (
	// GenConnecting: the attempt opens the transport, initializes the
	// session and lists the tools.
	GenConnecting GenState = "connecting"
	// GenUp: the attempt succeeded; the session serves calls.
	GenUp GenState = "up"
	// GenBad: the connection is known bad (the session ended, a
	// keep-alive probe went unanswered, a request found the server gone);
	// calls fail fast. The uptime ends at the moment recorded here.
	GenBad GenState = "bad"
	// GenClosing: shutdown started: in-flight calls retired (unless the
	// session ended by itself), the session closing, the process
	// terminating. The close barrier: nothing replaces the generation
	// until it leaves this state.
	GenClosing GenState = "closing"
	// GenExpired: CloseTimeout passed before the process was confirmed
	// gone: the supervisor halts (or disposal gives up) rather than risk
	// two processes of one server. The process may still exit.
	GenExpired GenState = "expired"
	// GenReleased: the process is gone (at once for a transport without
	// one). Terminal.
	GenReleased GenState = "released"

	genOpen     GenState = "open"     // superstate: connecting, up, bad
	genShutting GenState = "shutting" // superstate: closing, expired
)

// GenEvent is an event of the generation machine.
type GenEvent string

// The events of the generation machine.
const (
	// GenConnected: the attempt initialized the session and listed its tools.
	GenConnected GenEvent = "connected"
	// GenWentBad: the first bad news about an established connection.
	GenWentBad GenEvent = "went-bad"
	// GenClose: the generation is shut down: its attempt failed, its
	// connection went bad, or the supervisor retires it.
	GenClose GenEvent = "close"
	// GenExpire: CloseTimeout passed since the shutdown started.
	GenExpire GenEvent = "expire"
	// GenRelease: the transport's process is gone.
	GenRelease GenEvent = "release"
)

// GenerationTable returns the declaration of the lifecycle every
// generation (one transport, one session) goes through. A generation's
// state changes only by a transition of this table, and each transition
// the supervisor must hear about reports exactly one message to its loop:
// connected the attempt's tools; the first of release and expire the
// failed attempt or the lost connection (with whether the process is
// gone); a release after the expiry a wake-up, so that a halted
// supervisor sees the process gone.
func GenerationTable() fsm.Spec[GenState, GenEvent, struct{}] {
	return fsm.Spec[GenState, GenEvent, struct{}]{
		Name:    "generation",
		Initial: genOpen,
		States: []fsm.State[GenState]{
			{Name: genOpen, Initial: GenConnecting, Doc: "close leaves every state in here"},
			{Name: GenConnecting, Parent: genOpen, Doc: "opening, initializing, listing tools"},
			{Name: GenUp, Parent: genOpen, Doc: "session up; calls served"},
			{Name: GenBad, Parent: genOpen, Doc: "connection known bad; calls fail fast", Alarm: true},
			{Name: genShutting, Doc: "the close barrier: nothing replaces the generation in here"},
			{Name: GenClosing, Parent: genShutting, Doc: "calls retired, session closing, process terminating"},
			{Name: GenExpired, Parent: genShutting, Doc: "CloseTimeout passed; the process may still exit", Alarm: true},
			{Name: GenReleased, Terminal: true, Doc: "the process is gone"},
		},
		Events: []fsm.Event[GenEvent]{
			{Name: GenConnected, Doc: "the attempt's tools listed"},
			{Name: GenWentBad, Doc: "the first bad news: session ended, probe unanswered, server gone"},
			{Name: GenClose, Doc: "attempt failed, connection bad, or retired by the supervisor"},
			{Name: GenExpire, Doc: "CloseTimeout passed"},
			{Name: GenRelease, Doc: "the process is gone"},
		},
		Transitions: []fsm.Transition[GenState, GenEvent, struct{}]{
			{Event: GenConnected, From: []GenState{GenConnecting}, To: GenUp},
			{Event: GenWentBad, From: []GenState{GenUp}, To: GenBad},
			{Event: GenClose, From: []GenState{genOpen}, To: GenClosing},
			{Event: GenExpire, From: []GenState{GenClosing}, To: GenExpired},
			{Event: GenRelease, From: []GenState{genShutting}, To: GenReleased},
		},
	}
}

// genMoves is GenerationTable flattened once: the next state for every
// (state, event) the table permits. Every generation's transitions look
// it up; nothing else changes a generation's state.
var genMoves = func() map[GenState]map[GenEvent]GenState {
	spec := GenerationTable()
	if err := spec.Validate(); err != nil {
		panic(fmt.Sprintf("conn: generation table: %v", err)) // tested to be valid
	}
	out := map[GenState]map[GenEvent]GenState{}
	for _, e := range spec.Flatten() {
		if out[e.From] == nil {
			out[e.From] = map[GenEvent]GenState{}
		}
		out[e.From][e.Event] = e.To
	}
	return out
}()

// genStates holds one pointer per state, so that a transition stores a
// pointer and allocates nothing.
var genStates = func() map[GenState]*GenState {
	out := map[GenState]*GenState{}
	for _, st := range GenerationTable().States {
		out[st.Name] = &st.Name
	}
	return out
}()
