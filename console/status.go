package console

import (
	"cmp"
	"slices"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
)

// StatusReport is the body of GET /api/status and of every "status" event
// of /api/events. Its JSON field names are stable; the package doc lists
// them.
type StatusReport struct {
	// Now is the host's clock when the report was made, so a client can
	// compute uptimes and countdowns without trusting its own clock.
	Now     time.Time      `json:"now"`
	Servers []ServerStatus `json:"servers"` // sorted by name
}

// ServerStatus is one server in a [StatusReport].
type ServerStatus struct {
	Name        string `json:"name"`
	State       string `json:"state"`   // a conn.State, e.g. "lost-reconnecting"
	Phrase      string `json:"phrase"`  // conn.State.Phrase, e.g. "connection lost; reconnecting"
	Alarm       bool   `json:"alarm"`   // an alarm state of conn.Table (red in the diagrams)
	Attempt     int    `json:"attempt"` // 0 on the initial attempt, n of maxAttempts in an outage
	MaxAttempts int    `json:"maxAttempts"`
	// Since is when the current state was entered.
	Since time.Time `json:"since,omitzero"`
	// NextRetry is when the next attempt starts; only while backing off.
	NextRetry time.Time `json:"nextRetry,omitzero"`
	DelayMs   int64     `json:"delayMs,omitempty"` // the current backoff delay
	// LastError is the most recent failure or loss (conn.Status.LastErr),
	// with its cause; it stays after a recovery.
	LastError  string   `json:"lastError,omitempty"`
	Generation uint64   `json:"generation"`
	Tools      []string `json:"tools"` // public tool names, sorted
	ToolCount  int      `json:"toolCount"`
	// HiddenTools is how many tools the server listed that its filter
	// (includeTools/excludeTools) kept from the clients.
	HiddenTools int                `json:"hiddenTools,omitempty"`
	Transitions []TransitionRecord `json:"transitions"` // recent, oldest first
	// Sandbox says what the server's sandbox allows, one aspect a line
	// ("read: everything; not ~/.ssh", "network: none", ...); absent when it
	// runs unsandboxed (see [Sandboxed]).
	Sandbox []string `json:"sandbox,omitempty"`
	// Instances counts the server's instances beside its shared one (its
	// per-client instances, or a shared server's instance for 2026-07-28
	// clients) by the state of their connection (see [Instanced]); a
	// count, never whose.
	Instances map[string]int `json:"instances,omitempty"`
	// Callers are the server's callers' requests over the last hour, by
	// caller (Options.Callers): the operator's console sees who called.
	Callers []CallerCount `json:"callers,omitempty"`
	// SignIn is true when the server needs a sign-in and the operator can
	// start it here (POST /api/servers/NAME/signin; see [SignInStarter]).
	SignIn bool `json:"signIn,omitempty"`
}

// CallerCount is one caller's requests to a server over the last hour:
// those let through, and those its per-caller policy refused.
type CallerCount struct {
	Subject  string `json:"subject"`
	Operator bool   `json:"operator,omitempty"`
	// Others is the count of the callers beyond the ones counted apart.
	Others  bool `json:"others,omitempty"`
	Allowed int  `json:"allowed"`
	Denied  int  `json:"denied,omitempty"`
	Limited int  `json:"limited,omitempty"`
}

// Instanced is implemented by a [Server] that runs per-client
// instances: how many, by the state of their connection.
type Instanced interface {
	Instances() map[conn.State]int
}

// Sandboxed is implemented by a [Server] that may run in a sandbox: its
// lines are the status's Sandbox (nil: none).
type Sandboxed interface {
	Sandbox() []string
}

// TransitionRecord is one conn.Transition in a [ServerStatus].
type TransitionRecord struct {
	At          time.Time `json:"at"`
	From        string    `json:"from"`
	To          string    `json:"to"`
	Event       string    `json:"event"`
	Attempt     int       `json:"attempt"`
	MaxAttempts int       `json:"maxAttempts"`
	DelayMs     int64     `json:"delayMs,omitempty"`
	Error       string    `json:"error,omitempty"`
	Generation  uint64    `json:"generation"`
}

// serverStatus converts a supervisor's status and recent transitions.
func serverStatus(s conn.Status, recent []conn.Transition) ServerStatus {
	out := ServerStatus{
		Name: s.Server, State: string(s.State), Phrase: s.State.Phrase(), Alarm: isAlarm(s.State),
		Attempt: s.Attempt, MaxAttempts: s.MaxAttempts, Since: s.Since, NextRetry: s.NextRetry,
		DelayMs: s.Delay.Milliseconds(), Generation: s.Generation,
		Tools: append([]string{}, s.Tools...), ToolCount: len(s.Tools), HiddenTools: s.HiddenTools,
		Transitions: make([]TransitionRecord, 0, len(recent)),
	}
	if s.LastErr != nil {
		out.LastError = s.LastErr.Error()
	}
	for _, t := range recent {
		r := TransitionRecord{
			At: t.At, From: string(t.From), To: string(t.To), Event: string(t.Event),
			Attempt: t.Attempt, MaxAttempts: t.MaxAttempts, DelayMs: t.Delay.Milliseconds(), Generation: t.Generation,
		}
		if t.Err != nil {
			r.Error = t.Err.Error()
		}
		out.Transitions = append(out.Transitions, r)
	}
	return out
}

// isAlarm reports whether conn.Table declares st an alarm state.
func isAlarm(st conn.State) bool {
	return slices.Contains(alarmStates, st)
}

var alarmStates = func() []conn.State {
	var out []conn.State
	for _, st := range conn.Table().States {
		if st.Alarm {
			out = append(out, st.Name)
		}
	}
	return out
}()

// report builds the status report of every server the host runs.
func (c *Console) report() StatusReport {
	servers := c.host.Servers()
	r := StatusReport{Now: c.clk.Now(), Servers: make([]ServerStatus, 0, len(servers))}
	for _, s := range servers {
		st := s.Status()
		ss := serverStatus(st, c.hist.recent(st.Server))
		ss.SignIn = canSignIn(s, st)
		if sb, ok := s.(Sandboxed); ok {
			ss.Sandbox = sb.Sandbox()
		}
		if in, ok := s.(Instanced); ok {
			for state, n := range in.Instances() {
				if ss.Instances == nil {
					ss.Instances = map[string]int{}
				}
				ss.Instances[string(state)] = n
			}
		}
		if c.opts.Callers != nil {
			for _, n := range c.opts.Callers(st.Server) {
				ss.Callers = append(ss.Callers, CallerCount{Subject: n.Subject, Operator: n.Operator, Others: n.Others,
					Allowed: n.Allowed, Denied: n.Denied, Limited: n.Limited})
			}
		}
		r.Servers = append(r.Servers, ss)
	}
	slices.SortFunc(r.Servers, func(a, b ServerStatus) int { return cmp.Compare(a.Name, b.Name) })
	return r
}

// find returns the server named name.
func (c *Console) find(name string) (Server, bool) {
	for _, s := range c.host.Servers() {
		if s.Status().Server == name {
			return s, true
		}
	}
	return nil, false
}
