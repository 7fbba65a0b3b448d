package conn

import (
	"fmt"

	"github.com/mcpfsm/mcpfsm/fsm"
)

// genState is a state of a generation's lifecycle ([generationTable]).
type genState string

// The states of the generation machine.
const (
	// genConnecting: the attempt opens the transport, initializes the
	// session and lists the tools.
	genConnecting genState = "connecting"
	// genUp: the attempt succeeded; the session serves calls.
	genUp genState = "up"
	// genBad: the connection is known bad (the session ended, a
	// keep-alive probe went unanswered, a request found the server gone);
	// calls fail fast. The uptime ends at the moment recorded here.
	genBad genState = "bad"
	// genClosing: shutdown started: in-flight calls retired (unless the
	// session ended by itself), the session closing, the process
	// terminating. The close barrier: nothing replaces the generation
	// until it leaves this state.
	genClosing genState = "closing"
	// genExpired: CloseTimeout passed before the process was confirmed
	// gone: the supervisor halts (or disposal gives up) rather than risk
	// two processes of one server. The process may still exit.
	genExpired genState = "expired"
	// genReleased: the process is gone (at once for a transport without
	// one). Terminal.
	genReleased genState = "released"

	genOpen     genState = "open"     // superstate: connecting, up, bad
	genShutting genState = "shutting" // superstate: closing, expired
)

// genEvent is an event of the generation machine.
type genEvent string

// The events of the generation machine.
const (
	// genConnected: the attempt initialized the session and listed its tools.
	genConnected genEvent = "connected"
	// genWentBad: the first bad news about an established connection.
	genWentBad genEvent = "went-bad"
	// genClose: the generation is shut down: its attempt failed, its
	// connection went bad, or the supervisor retires it.
	genClose genEvent = "close"
	// genExpire: CloseTimeout passed since the shutdown started.
	genExpire genEvent = "expire"
	// genRelease: the transport's process is gone.
	genRelease genEvent = "release"
)

// generationTable returns the declaration of the lifecycle every
// generation (one transport, one session) goes through. A generation's
// state changes only by a transition of this table, and each transition
// the supervisor must hear about reports exactly one message to its loop:
// connected the attempt's tools; the first of release and expire the
// failed attempt or the lost connection (with whether the process is
// gone); a release after the expiry a wake-up, so that a halted
// supervisor sees the process gone.
func generationTable() fsm.Spec[genState, genEvent, struct{}] {
	return fsm.Spec[genState, genEvent, struct{}]{
		Name:    "generation",
		Initial: genOpen,
		States: []fsm.State[genState]{
			{Name: genOpen, Initial: genConnecting, Doc: "close leaves every state in here"},
			{Name: genConnecting, Parent: genOpen, Doc: "opening, initializing, listing tools"},
			{Name: genUp, Parent: genOpen, Doc: "session up; calls served"},
			{Name: genBad, Parent: genOpen, Doc: "connection known bad; calls fail fast", Alarm: true},
			{Name: genShutting, Doc: "the close barrier: nothing replaces the generation in here"},
			{Name: genClosing, Parent: genShutting, Doc: "calls retired, session closing, process terminating"},
			{Name: genExpired, Parent: genShutting, Doc: "CloseTimeout passed; the process may still exit", Alarm: true},
			{Name: genReleased, Terminal: true, Doc: "the process is gone"},
		},
		Events: []fsm.Event[genEvent]{
			{Name: genConnected, Doc: "the attempt's tools listed"},
			{Name: genWentBad, Doc: "the first bad news: session ended, probe unanswered, server gone"},
			{Name: genClose, Doc: "attempt failed, connection bad, or retired by the supervisor"},
			{Name: genExpire, Doc: "CloseTimeout passed"},
			{Name: genRelease, Doc: "the process is gone"},
		},
		Transitions: []fsm.Transition[genState, genEvent, struct{}]{
			{Event: genConnected, From: []genState{genConnecting}, To: genUp},
			{Event: genWentBad, From: []genState{genUp}, To: genBad},
			{Event: genClose, From: []genState{genOpen}, To: genClosing},
			{Event: genExpire, From: []genState{genClosing}, To: genExpired},
			{Event: genRelease, From: []genState{genShutting}, To: genReleased},
		},
	}
}

// genMoves is generationTable flattened once: the next state for every
// (state, event) the table permits. Every generation's transitions look
// it up; nothing else changes a generation's state.
var genMoves = func() map[genState]map[genEvent]genState {
	spec := generationTable()
	if err := spec.Validate(); err != nil {
		panic(fmt.Sprintf("conn: generation table: %v", err)) // tested to be valid
	}
	out := map[genState]map[genEvent]genState{}
	for _, e := range spec.Flatten() {
		if out[e.From] == nil {
			out[e.From] = map[genEvent]genState{}
		}
		out[e.From][e.Event] = e.To
	}
	return out
}()

// genStates holds one pointer per state, so that a transition stores a
// pointer and allocates nothing.
var genStates = func() map[genState]*genState {
	out := map[genState]*genState{}
	for _, st := range generationTable().States {
		out[st.Name] = &st.Name
	}
	return out
}()
