package conn

import (
	"log/slog"
	"time"

	"github.com/mcpfsm/mcpfsm/fsm"
)

// State is a state of the connection machine. Its string value is the name
// used in diagrams, logs (attribute "state") and [Transition] records.
//
// The set of states is closed: every State value a [Supervisor] reports is
// one of the constants below, and everything the package says about a
// state (its doc, phrase, log level, kind and diagram colour) is declared
// once, in the list [Table] is built from.
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
	// Exhausted: the outage budget is spent; the tools are unregistered.
	// Nothing more is tried until [Supervisor.Reconnect], or the next probe
	// when the policy has a ProbeInterval.
	Exhausted State = "exhausted"
	// FailedDisabled: an attempt failed and reconnect is disabled by policy;
	// no tools were registered by it.
	FailedDisabled State = "failed-disabled"
	// LostDisabled: an established connection dropped and reconnect is
	// disabled by policy; its tools stay registered and fail fast.
	LostDisabled State = "lost-disabled"
	// FailedPermanent: attempts failed in a way no wait can fix (the
	// command is missing or not executable, the working directory is
	// missing, the URL's host does not resolve), twice in a row; the
	// tools are unregistered and nothing more is tried until
	// [Supervisor.Reconnect]. Its log line names the fix.
	FailedPermanent State = "failed-permanent"
	// Halted: a server process did not exit within the close timeout, so
	// reconnecting stopped rather than risk two processes of one server.
	// [Supervisor.Reconnect] leaves it once that process has exited.
	Halted State = "halted"
	// AuthRefused: the server refused authorization (HTTP 401 or 403)
	// after the OAuth handler gave up, or with none set. Retrying with the
	// same credentials cannot help, so nothing more is tried and the outage
	// budget is not spent; the state waits for [Supervisor.Reconnect]
	// (once the credentials are fixed) or Close.
	AuthRefused State = "auth-refused"
	// Disposing: Close was called; the supervisor is quiescing.
	Disposing State = "disposing"
	// Disposed: everything the supervisor started has stopped. Terminal.
	Disposed State = "disposed"
)

// Event is an event of the connection machine: something that happened to
// the connection, named in the past tense where it reports an outcome.
type Event string

// The events of the connection machine. An event may lead to several
// states; the guards of [Table] choose one from the event's [Payload].
const (
	// EventConnected: the attempt initialized a session and its tools were swapped in.
	EventConnected Event = "connected"
	// EventAttemptFailed: the attempt failed. It leads to halted, failed-disabled,
	// failed-permanent, exhausted or failed-retrying, as the guards decide.
	EventAttemptFailed Event = "attempt-failed"
	// EventConnectionLost: an established session ended. It leads to halted,
	// lost-disabled, exhausted or lost-reconnecting, as the guards decide.
	EventConnectionLost Event = "connection-lost"
	// EventBackoffElapsed: the backoff delay elapsed; the next attempt starts.
	EventBackoffElapsed Event = "backoff-elapsed"
	// EventReconnect: [Supervisor.Reconnect] started an attempt at once, from
	// a backoff or a state where reconnecting had stopped.
	EventReconnect Event = "reconnect"
	// EventProbe: the policy's ProbeInterval elapsed in exhausted; one
	// attempt starts, and its failure leads back to exhausted.
	EventProbe Event = "probe"
	// EventDispose: Close was called.
	EventDispose Event = "dispose"
	// EventDisposed: every goroutine and process of the supervisor has stopped.
	EventDisposed Event = "disposed"
)

// Payload is what an event of the connection machine carries: the guards
// of [Table] read it to choose the next state, the entry actions read it
// (the attempt to start, the delay to wait), and it becomes the
// [Transition] record.
type Payload struct {
	Attempt     int           // as in Transition
	MaxAttempts int           // as in Transition
	Delay       time.Duration // the backoff before the next attempt
	Err         error         // a *FailedError, *LostError or *AuthError, for a failure, loss or refusal
	Generation  uint64        // the generation the step concerns; 0 for the newest
	Protocol    string        // the protocol version the generation negotiated (connected only)

	// The outcome of a failure or loss, which the guards read.
	released  bool // the generation confirmed its process gone within CloseTimeout
	enabled   bool // the reconnect policy is enabled
	retry     bool // the outage budget granted another attempt after Delay
	refused   bool // the server refused authorization: no retry can help
	permanent bool // a second attempt in a row failed in a way no wait can fix
}

// kind is what a state says about the connection, beyond its name.
type kind uint8

const (
	plain   kind = iota // nothing wrong
	failed              // connection failed: the server did not come up
	lost                // connection lost: an established connection dropped
	stopped             // reconnecting stopped for another reason
)

// stateFacts is everything declared about one state.
type stateFacts struct {
	fsm.State[State]
	phrase string     // the user-facing phrase log messages are built from
	level  slog.Level // the level entering the state is logged at
	kind   kind       // failed, lost, stopped or plain; drawn in red unless plain
	// say builds the log line of entering the state from its phrase, and
	// the attributes beyond server, state, generation and err; nil means
	// the phrase alone.
	say func(phrase string, t Transition, closeTimeout time.Duration) (msg string, attrs []any)
}

// states declares every state once: its doc and terminality (the fsm
// declaration), its phrase, log level, kind (which also decides its
// diagram colour) and log line. [Table], the State methods and the log
// lines all read it.
var states = []stateFacts{
	{fsm.State[State]{Name: Connecting, Doc: "opening a transport, initializing, listing tools"},
		"connecting", slog.LevelDebug, plain, nil},
	{fsm.State[State]{Name: Established, Doc: "session up; tools registered"},
		"connected", slog.LevelInfo, plain, sayConnected},
	{fsm.State[State]{Name: FailedRetrying, Doc: "connection failed; retrying after backoff"},
		"connection failed; retrying", slog.LevelWarn, failed, sayBackoff},
	{fsm.State[State]{Name: LostReconnecting, Doc: "connection lost; reconnecting after backoff; tools fail fast"},
		"connection lost; reconnecting", slog.LevelWarn, lost, sayBackoff},
	{fsm.State[State]{Name: Exhausted, Doc: "outage budget spent; tools unregistered"},
		"giving up", slog.LevelError, stopped, sayExhausted},
	{fsm.State[State]{Name: FailedDisabled, Doc: "connection failed; reconnect disabled; no tools"},
		"connection failed and reconnect is disabled", slog.LevelError, failed, sayFailedDisabled},
	{fsm.State[State]{Name: LostDisabled, Doc: "connection lost; reconnect disabled; tools fail fast"},
		"connection lost and reconnect is disabled", slog.LevelError, lost, sayLostDisabled},
	{fsm.State[State]{Name: FailedPermanent, Doc: "connection failed; no retry can fix it; tools unregistered"},
		"connection failed and no retry can fix it", slog.LevelError, failed, sayFailedPermanent},
	{fsm.State[State]{Name: Halted, Doc: "old server process never exited; reconnect stopped"},
		"server process did not exit; reconnect halted", slog.LevelError, stopped, sayHalted},
	{fsm.State[State]{Name: AuthRefused, Doc: "server refused authorization (HTTP 401/403); waiting for Reconnect or Close"},
		"authorization refused", slog.LevelError, stopped, sayAuthRefused},
	{fsm.State[State]{Name: Disposing, Doc: "Close called; quiescing"},
		"disposing", slog.LevelDebug, plain, nil},
	{fsm.State[State]{Name: Disposed, Doc: "nothing left running", Terminal: true},
		"disposed", slog.LevelDebug, plain, nil},
}

// facts returns the declaration of s; an undeclared s gets the zero facts.
func (s State) facts() stateFacts {
	for _, f := range states {
		if f.Name == s {
			return f
		}
	}
	return stateFacts{}
}

// Phrase is the user-facing phrase for the state, such as
// "connection failed; retrying". Log messages are built from it, so a
// failure before the connection came up and the loss of an established
// connection can never be worded alike.
func (s State) Phrase() string { return s.facts().phrase }

// Level is the slog level at which entering the state is logged.
func (s State) Level() slog.Level { return s.facts().level }

// Failed reports whether the state is one of the "connection failed" states:
// the server did not come up.
func (s State) Failed() bool { return s.facts().kind == failed }

// Lost reports whether the state is one of the "connection lost" states: an
// established connection dropped.
func (s State) Lost() bool { return s.facts().kind == lost }

// Terminal reports whether no transition leaves the state.
func (s State) Terminal() bool { return s.facts().Terminal }

// String returns the state's name.
func (s State) String() string { return string(s) }

// String returns the event's name.
func (e Event) String() string { return string(e) }

// The guards of [Table], tried in declaration order.
var (
	notReleased = func(p Payload) bool { return !p.released }
	disabled    = func(p Payload) bool { return !p.enabled }
	spent       = func(p Payload) bool { return !p.retry }
	refused     = func(p Payload) bool { return p.refused }
	permanent   = func(p Payload) bool { return p.permanent }
	released    = func(p Payload) bool { return p.released }
)
