package conn

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpfsm/mcpfsm/fsm"
)

// The three machines, declared as data: the connection machine (its
// states with everything said about them, events, payload, guards and
// Table), the generation's lifecycle and the tool-sync machine, each with
// its compiled form, and Machines, which draws them. The code that runs
// them is in loop.go.

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
	// NeedsAuthorization: the server answered 401 (or 403) and the HTTP
	// OAuth handler holds no usable credential: a person must sign in (the
	// handler returned a [*SignInError] saying how). No backoff timer runs
	// and the outage budget is not spent; the state is left for connecting
	// once the handler has a credential (see [CredentialWaiter]), or by
	// [Supervisor.Reconnect] or Close. Entered from connecting, and from
	// established when the credential expires and cannot be refreshed. The
	// last tools stay registered and fail fast with how to sign in.
	NeedsAuthorization State = "needs-authorization"
	// AuthRefused: the server refused authorization (HTTP 401 or 403)
	// after the OAuth handler gave up, or with none set: it refuses the
	// credential it was given (a static header, a client it rejects, a
	// scope still missing after step-up). Retrying with the same
	// credentials cannot help, so nothing more is tried and the outage
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
	// EventAuthorized: in needs-authorization, the OAuth handler got a
	// credential (a person signed in); the next attempt starts.
	EventAuthorized Event = "authorized"
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
	signIn    bool // the server needs a credential the OAuth handler lacks: a person must sign in
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
	{fsm.State[State]{Name: NeedsAuthorization, Doc: "server needs a sign-in (HTTP 401, no usable credential); no timer, no budget spent; waiting for a credential"},
		"sign-in required", slog.LevelWarn, stopped, sayNeedsAuthorization},
	{fsm.State[State]{Name: AuthRefused, Doc: "server refused the credential (HTTP 401/403); waiting for Reconnect or Close"},
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
	signIn      = func(p Payload) bool { return p.signIn }
	permanent   = func(p Payload) bool { return p.permanent }
	released    = func(p Payload) bool { return p.released }
)

// The superstates of the connection machine. They group states that
// share a transition, so that the table declares it once; the machine is
// never in a superstate itself, and no Supervisor reports one.
const (
	// live holds every state but disposal's: Close leaves any of them.
	live State = "live"
	// waiting holds the states [Supervisor.Reconnect] leaves at once: a
	// backoff, and every state where reconnecting stopped for a reason a
	// human may have fixed. Halted is not among them: it is left only
	// once its process has exited (its own, guarded, reconnect).
	waiting State = "waiting"
)

// superstates declares the superstates and, for each state of the states
// list, the superstate it lies in.
var superstates = []fsm.State[State]{
	{Name: live, Doc: "Close leaves every state in here"},
	{Name: waiting, Parent: live, Doc: "Reconnect leaves every state in here at once"},
}

// parentOf returns the superstate a state of the states list lies in.
func parentOf(st State) State {
	switch st {
	case FailedRetrying, LostReconnecting, Exhausted, FailedDisabled, LostDisabled, FailedPermanent, NeedsAuthorization, AuthRefused:
		return waiting
	case Disposing, Disposed:
		return ""
	}
	return live
}

// Table returns the connection machine's declaration: its states, events
// and transitions, and the guards that choose among the outcomes of a
// failure or loss. It is the single source the supervisor runs, the
// diagrams are rendered from, and the table tests check.
//
// Invariants held by the table (and tested): lost-* states are entered only
// from established; failed-* states only from connecting;
// needs-authorization from those two only, and no timer leaves it; nothing leaves
// disposed; dispose is possible from every other state except disposing
// itself, which is already on its way to disposed.
//
// Two superstates declare the shared transitions once: live (every state
// but disposing and disposed) carries dispose, and waiting (the states
// Reconnect leaves at once) carries reconnect. Halted, inside live but not
// waiting, has its own reconnect, guarded by its process's exit.
//
// Adding a state: declare it in the states list (doc, phrase, level,
// kind) and its superstate (parentOf), add its transitions here (with a guard if it is one outcome of an
// existing event, placed before the unguarded fallback), give it an entry
// action in Start if it needs one, then regenerate the diagrams.
func Table() fsm.Spec[State, Event, Payload] {
	spec := fsm.Spec[State, Event, Payload]{
		Name:    "connection",
		Initial: Connecting,
		Events: []fsm.Event[Event]{
			{Name: EventConnected, Doc: "session initialized (server/discover; or initialize, also at once within the attempt after a server died on the probe) and tools swapped in"},
			{Name: EventAttemptFailed, Doc: "the attempt failed"},
			{Name: EventConnectionLost, Doc: "the established session ended: stdio process gone; a keep-alive probe unanswered within KeepAlive (ping, or server/discover on 2026-07-28); a transport failure"},
			{Name: EventBackoffElapsed, Doc: "backoff delay elapsed"},
			{Name: EventReconnect, Doc: "Reconnect called"},
			{Name: EventProbe, Doc: "probe interval elapsed"},
			{Name: EventAuthorized, Doc: "the OAuth handler got a credential: a person signed in"},
			{Name: EventDispose, Doc: "Close called"},
			{Name: EventDisposed, Doc: "every goroutine and process stopped"},
		},
		Transitions: []fsm.Transition[State, Event, Payload]{
			{Event: EventConnected, From: []State{Connecting}, To: Established},

			{Event: EventAttemptFailed, From: []State{Connecting}, To: Halted, Guard: notReleased, When: "not released"},
			{Event: EventAttemptFailed, From: []State{Connecting}, To: NeedsAuthorization, Guard: signIn, When: "sign-in required"},
			{Event: EventAttemptFailed, From: []State{Connecting}, To: AuthRefused, Guard: refused, When: "authorization refused"},
			{Event: EventAttemptFailed, From: []State{Connecting}, To: FailedDisabled, Guard: disabled, When: "reconnect disabled"},
			{Event: EventAttemptFailed, From: []State{Connecting}, To: FailedPermanent, Guard: permanent, When: "no retry can fix it"},
			{Event: EventAttemptFailed, From: []State{Connecting}, To: Exhausted, Guard: spent, When: "budget spent"},
			{Event: EventAttemptFailed, From: []State{Connecting}, To: FailedRetrying},

			{Event: EventConnectionLost, From: []State{Established}, To: Halted, Guard: notReleased, When: "not released"},
			{Event: EventConnectionLost, From: []State{Established}, To: NeedsAuthorization, Guard: signIn, When: "sign-in required"},
			{Event: EventConnectionLost, From: []State{Established}, To: LostDisabled, Guard: disabled, When: "reconnect disabled"},
			{Event: EventConnectionLost, From: []State{Established}, To: Exhausted, Guard: spent, When: "budget spent"},
			{Event: EventConnectionLost, From: []State{Established}, To: LostReconnecting},

			{Event: EventBackoffElapsed, From: []State{FailedRetrying, LostReconnecting}, To: Connecting},
			{Event: EventReconnect, From: []State{waiting}, To: Connecting},
			{Event: EventReconnect, From: []State{Halted}, To: Connecting, Guard: released, When: "process gone"},
			{Event: EventProbe, From: []State{Exhausted}, To: Connecting},
			{Event: EventAuthorized, From: []State{NeedsAuthorization}, To: Connecting},
			{Event: EventDispose, From: []State{live}, To: Disposing},
			{Event: EventDisposed, From: []State{Disposing}, To: Disposed},
		},
	}
	for _, f := range states {
		st := f.State
		st.Alarm = f.kind != plain
		st.Parent = parentOf(st.Name)
		spec.States = append(spec.States, st)
	}
	spec.States = append(spec.States, superstates...)
	return spec
}

// compiledTable is Table compiled once: every supervisor's machine shares
// its tables.
var compiledTable = sync.OnceValues(func() (*fsm.Compiled[State, Event, Payload], error) {
	return fsm.Compile(Table())
})

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

// syncState is a state of a generation's tool-sync machine ([syncTable]).
type syncState string

// The states of the tool-sync machine.
const (
	// syncListing: a tools/list is in flight (the attempt's own, or a re-sync).
	syncListing syncState = "listing"
	// syncStale: a list_changed arrived while listing; list again when done.
	syncStale syncState = "listing-stale"
	// syncIdle: the registered tools are the last listing's.
	syncIdle syncState = "in-sync"
)

// syncEvent is an event of the tool-sync machine.
type syncEvent string

// The events of the tool-sync machine.
const (
	// syncChanged: the server sent notifications/tools/list_changed.
	syncChanged syncEvent = "list-changed"
	// syncListed: a listing finished (and, if it succeeded, was swapped in).
	syncListed syncEvent = "listed"
)

// syncTable returns the declaration of the tool-sync machine each
// generation runs on the supervisor's loop: at most one listing at a time,
// and a storm of list_changed notifications costs at most one more. A
// generation starts in listing, because its attempt lists the tools, so a
// notification that arrives before the connection is up only marks the
// listing stale: the attempt's own listing still decides startup, and the
// re-sync follows once the generation is established.
func syncTable() fsm.Spec[syncState, syncEvent, struct{}] {
	return fsm.Spec[syncState, syncEvent, struct{}]{
		Name:    "tool-sync",
		Initial: syncListing,
		States: []fsm.State[syncState]{
			{Name: syncListing, Doc: "tools/list in flight"},
			{Name: syncStale, Doc: "tools/list in flight; the server changed its tools meanwhile"},
			{Name: syncIdle, Doc: "registered tools are the last listing's"},
		},
		Events: []fsm.Event[syncEvent]{
			{Name: syncChanged, Doc: "notifications/tools/list_changed arrived"},
			{Name: syncListed, Doc: "a listing finished"},
		},
		Transitions: []fsm.Transition[syncState, syncEvent, struct{}]{
			{Event: syncChanged, From: []syncState{syncIdle}, To: syncListing},
			{Event: syncChanged, From: []syncState{syncListing, syncStale}, To: syncStale},
			{Event: syncListed, From: []syncState{syncListing}, To: syncIdle},
			{Event: syncListed, From: []syncState{syncStale}, To: syncListing},
		},
	}
}

// compiledSync is syncTable compiled once: every generation's machine
// shares its tables.
var compiledSync = sync.OnceValues(func() (*fsm.Compiled[syncState, syncEvent, struct{}], error) {
	return fsm.Compile(syncTable())
})

// MachineDiagram is one of conn's machines drawn, as cmd/fsmdot writes
// it to diagrams/ and checks it there.
type MachineDiagram struct {
	Name    string // the machine's name, which names its files: "connection", "tool-sync", "generation"
	DOT     string // [fsm.Spec.DOT] of its table
	Mermaid string // [fsm.Spec.Mermaid] of its table
}

// Machines returns the diagrams of conn's three machines: the connection
// machine ([Table]), then the two each generation runs on the supervisor's
// loop, the tool-sync machine (one listing at a time, a storm of
// list_changed notifications costing at most one more) and the
// generation's lifecycle (connecting, up, bad, and the close barrier
// before its process is released). The inner two are conn's own; their
// diagrams are how they are documented.
func Machines() []MachineDiagram {
	conn, sync, gen := Table(), syncTable(), generationTable()
	return []MachineDiagram{
		{Name: conn.Name, DOT: conn.DOT(), Mermaid: conn.Mermaid()},
		{Name: sync.Name, DOT: sync.DOT(), Mermaid: sync.Mermaid()},
		{Name: gen.Name, DOT: gen.DOT(), Mermaid: gen.Mermaid()},
	}
}
