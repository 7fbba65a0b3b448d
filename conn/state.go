package conn

import (
	"log/slog"

	"github.com/mcpfsm/mcpfsm/fsm"
)

// State is a state of the connection machine. Its string value is the name
// used in diagrams, logs (attribute "state") and [Transition] records.
//
// The set of states is closed: every State value a [Supervisor] reports is
// one of the constants below, declared once in [Table].
type State string

// The states of the connection machine. The diagram in diagrams/ and the
// README is generated from [Table].
const (
	// Connecting: an attempt is opening a fresh transport, initializing a
	// session and listing the server's tools.
	Connecting State = "connecting"
	// Established: the current generation is up and its tools are registered.
	Established State = "established"
	// FailedRetrying: an attempt failed before the connection was up; a
	// retry is scheduled after a backoff delay.
	FailedRetrying State = "failed-retrying"
	// LostReconnecting: an established connection dropped; a reconnect is
	// scheduled after a backoff delay. The last good tools stay registered
	// and fail fast.
	LostReconnecting State = "lost-reconnecting"
	// Exhausted: the outage budget is spent; the tools are unregistered and
	// nothing more is tried until Close.
	Exhausted State = "exhausted"
	// FailedDisabled: an attempt failed and reconnect is disabled by policy;
	// no tools were registered by it.
	FailedDisabled State = "failed-disabled"
	// LostDisabled: an established connection dropped and reconnect is
	// disabled by policy; its tools stay registered and fail fast.
	LostDisabled State = "lost-disabled"
	// Halted: a server process did not exit within the close timeout, so
	// reconnecting stopped rather than risk two processes of one server.
	Halted State = "halted"
	// Disposing: Close was called; the supervisor is quiescing.
	Disposing State = "disposing"
	// Disposed: everything the supervisor started has stopped. Terminal.
	Disposed State = "disposed"
)

// Event is an event of the connection machine: something that happened to
// the connection, named in the past tense where it reports an outcome.
type Event string

// The events of the connection machine.
const (
	// EventConnected: the attempt initialized a session and its tools were swapped in.
	EventConnected Event = "connected"
	// EventAttemptFailed: the attempt failed and the policy grants a retry.
	EventAttemptFailed Event = "attempt-failed"
	// EventAttemptFailedNoRetry: the attempt failed and reconnect is disabled.
	EventAttemptFailedNoRetry Event = "attempt-failed-no-retry"
	// EventConnectionLost: an established session ended and the policy grants a reconnect.
	EventConnectionLost Event = "connection-lost"
	// EventConnectionLostNoRetry: an established session ended and reconnect is disabled.
	EventConnectionLostNoRetry Event = "connection-lost-no-retry"
	// EventBudgetExhausted: a failure or loss found the outage budget spent.
	EventBudgetExhausted Event = "budget-exhausted"
	// EventCloseTimeout: a server process did not exit within the close timeout.
	EventCloseTimeout Event = "close-timeout"
	// EventBackoffElapsed: the backoff delay elapsed; the next attempt starts.
	EventBackoffElapsed Event = "backoff-elapsed"
	// EventDispose: Close was called.
	EventDispose Event = "dispose"
	// EventDisposed: every goroutine and process of the supervisor has stopped.
	EventDisposed Event = "disposed"
)

// stateInfo is what the table says about a state beyond its transitions:
// the phrase log messages are built from, and the level they are logged at.
type stateInfo struct {
	phrase string
	level  slog.Level
}

var stateInfos = map[State]stateInfo{
	Connecting:       {"connecting", slog.LevelDebug},
	Established:      {"connected", slog.LevelInfo},
	FailedRetrying:   {"connection failed; retrying", slog.LevelWarn},
	LostReconnecting: {"connection lost; reconnecting", slog.LevelWarn},
	Exhausted:        {"giving up", slog.LevelError},
	FailedDisabled:   {"connection failed and reconnect is disabled", slog.LevelError},
	LostDisabled:     {"connection lost and reconnect is disabled", slog.LevelError},
	Halted:           {"server process did not exit; reconnect halted", slog.LevelError},
	Disposing:        {"disposing", slog.LevelDebug},
	Disposed:         {"disposed", slog.LevelDebug},
}

// Phrase is the user-facing phrase for the state, such as
// "connection failed; retrying". Log messages are built from it, so a
// failure before the connection came up and the loss of an established
// connection can never be worded alike.
func (s State) Phrase() string { return stateInfos[s].phrase }

// Level is the slog level at which entering the state is logged.
func (s State) Level() slog.Level { return stateInfos[s].level }

// Failed reports whether the state is one of the "connection failed" states:
// the server did not come up.
func (s State) Failed() bool { return s == FailedRetrying || s == FailedDisabled }

// Lost reports whether the state is one of the "connection lost" states: an
// established connection dropped.
func (s State) Lost() bool { return s == LostReconnecting || s == LostDisabled }

// Terminal reports whether no transition leaves the state.
func (s State) Terminal() bool { return s == Disposed }

// String returns the state's name.
func (s State) String() string { return string(s) }

// String returns the event's name.
func (e Event) String() string { return string(e) }

// nonTerminal lists every state from which Close may dispose.
var nonTerminal = []State{
	Connecting, Established, FailedRetrying, LostReconnecting,
	Exhausted, FailedDisabled, LostDisabled, Halted,
}

// Table returns the connection machine's declaration: its states, events
// and transitions. It is the single source the supervisor runs, the
// diagrams are rendered from, and the table tests check.
//
// Invariants held by the table (and tested): lost-* states are entered only
// from established; failed-* states only from connecting; nothing leaves
// disposed; dispose is possible from every other state except disposing
// itself, which is already on its way to disposed.
func Table() fsm.Spec[State, Event] {
	return fsm.Spec[State, Event]{
		Name:    "connection",
		Initial: Connecting,
		States: []fsm.State[State]{
			{Name: Connecting, Doc: "opening a transport, initializing, listing tools"},
			{Name: Established, Doc: "session up; tools registered"},
			{Name: FailedRetrying, Doc: "connection failed; retrying after backoff", Failure: true},
			{Name: LostReconnecting, Doc: "connection lost; reconnecting after backoff; tools fail fast", Failure: true},
			{Name: Exhausted, Doc: "outage budget spent; tools unregistered", Failure: true},
			{Name: FailedDisabled, Doc: "connection failed; reconnect disabled; no tools", Failure: true},
			{Name: LostDisabled, Doc: "connection lost; reconnect disabled; tools fail fast", Failure: true},
			{Name: Halted, Doc: "old server process never exited; reconnect stopped", Failure: true},
			{Name: Disposing, Doc: "Close called; quiescing"},
			{Name: Disposed, Doc: "nothing left running", Terminal: true},
		},
		Events: []fsm.Event[Event]{
			{Name: EventConnected, Doc: "session initialized and tools swapped in"},
			{Name: EventAttemptFailed, Doc: "attempt failed; budget grants a retry"},
			{Name: EventAttemptFailedNoRetry, Doc: "attempt failed; reconnect disabled"},
			{Name: EventConnectionLost, Doc: "established session ended; budget grants a reconnect"},
			{Name: EventConnectionLostNoRetry, Doc: "established session ended; reconnect disabled"},
			{Name: EventBudgetExhausted, Doc: "failure or loss with the outage budget spent"},
			{Name: EventCloseTimeout, Doc: "server process did not exit within the close timeout"},
			{Name: EventBackoffElapsed, Doc: "backoff delay elapsed"},
			{Name: EventDispose, Doc: "Close called"},
			{Name: EventDisposed, Doc: "every goroutine and process stopped"},
		},
		Transitions: []fsm.Transition[State, Event]{
			{Event: EventConnected, From: []State{Connecting}, To: Established},
			{Event: EventAttemptFailed, From: []State{Connecting}, To: FailedRetrying},
			{Event: EventAttemptFailedNoRetry, From: []State{Connecting}, To: FailedDisabled},
			{Event: EventConnectionLost, From: []State{Established}, To: LostReconnecting},
			{Event: EventConnectionLostNoRetry, From: []State{Established}, To: LostDisabled},
			{Event: EventBudgetExhausted, From: []State{Connecting, Established}, To: Exhausted},
			{Event: EventCloseTimeout, From: []State{Connecting, Established}, To: Halted},
			{Event: EventBackoffElapsed, From: []State{FailedRetrying, LostReconnecting}, To: Connecting},
			{Event: EventDispose, From: nonTerminal, To: Disposing},
			{Event: EventDisposed, From: []State{Disposing}, To: Disposed},
		},
	}
}
