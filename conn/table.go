package conn

import "github.com/mcpfsm/mcpfsm/fsm"

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
	case FailedRetrying, LostReconnecting, Exhausted, FailedDisabled, LostDisabled, FailedPermanent, AuthRefused:
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
// from established; failed-* states only from connecting; nothing leaves
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
			{Name: EventDispose, Doc: "Close called"},
			{Name: EventDisposed, Doc: "every goroutine and process stopped"},
		},
		Transitions: []fsm.Transition[State, Event, Payload]{
			{Event: EventConnected, From: []State{Connecting}, To: Established},

			{Event: EventAttemptFailed, From: []State{Connecting}, To: Halted, Guard: notReleased, When: "not released"},
			{Event: EventAttemptFailed, From: []State{Connecting}, To: AuthRefused, Guard: refused, When: "authorization refused"},
			{Event: EventAttemptFailed, From: []State{Connecting}, To: FailedDisabled, Guard: disabled, When: "reconnect disabled"},
			{Event: EventAttemptFailed, From: []State{Connecting}, To: FailedPermanent, Guard: permanent, When: "no retry can fix it"},
			{Event: EventAttemptFailed, From: []State{Connecting}, To: Exhausted, Guard: spent, When: "budget spent"},
			{Event: EventAttemptFailed, From: []State{Connecting}, To: FailedRetrying},

			{Event: EventConnectionLost, From: []State{Established}, To: Halted, Guard: notReleased, When: "not released"},
			{Event: EventConnectionLost, From: []State{Established}, To: LostDisabled, Guard: disabled, When: "reconnect disabled"},
			{Event: EventConnectionLost, From: []State{Established}, To: Exhausted, Guard: spent, When: "budget spent"},
			{Event: EventConnectionLost, From: []State{Established}, To: LostReconnecting},

			{Event: EventBackoffElapsed, From: []State{FailedRetrying, LostReconnecting}, To: Connecting},
			{Event: EventReconnect, From: []State{waiting}, To: Connecting},
			{Event: EventReconnect, From: []State{Halted}, To: Connecting, Guard: released, When: "process gone"},
			{Event: EventProbe, From: []State{Exhausted}, To: Connecting},
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
