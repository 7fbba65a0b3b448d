package sim

import (
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
)

// History is what a run saw, in the order it happened, at simulated
// times since the run's start. The invariants read it.
type History struct {
	Setups      []Setup      // the settings of each supervisor (incarnation), from 1
	Opens       []Open       // processes started, refused ones included
	Exits       []Exit       // processes gone
	Terminates  []Terminate  // processes conn terminated
	Publishes   []Publish    // swaps of the registry
	Transitions []Move       // the connection machine's transitions
	Calls       []*Call      // tool calls and Reconnects of the host
	Closes      []Close      // supervisors closed
	Calms       []Calm       // what the run found once the world had been calm for a while
	Bugs        []string     // log lines in which conn reports a bug of its own
	Leaks       []string     // goroutines and timers left once everything was closed
	Starts      []StartError // Start calls that failed
	Logged      []Logged     // the supervisors' log lines of transitions into failed-* and lost-* states

	Now   time.Duration  // when the invariants are checked
	Final bool           // the run has ended: every request must have returned
	Execs map[string]int // executions of each call on the server, by call id
	procs []Proc         // the plan each process started with

	traceChecked int                // transitions TraceFollowsTable has checked
	traceLast    map[int]conn.State // where each supervisor's checked transitions ended
}

// Open is a process started by supervisor Inc; Alive are the processes
// that had not exited then (not counting those a failed Close gave up on).
type Open struct {
	At      time.Duration
	Proc    int
	Inc     int
	Alive   []int
	Refused string
}

// Exit is a process gone.
type Exit struct {
	At   time.Duration
	Proc int
}

// Terminate is conn terminating a process (conn.Terminator).
type Terminate struct {
	At   time.Duration
	Proc int
}

// Publish is a swap of the registry by supervisor Inc: the tools it
// registered ("name=description", sorted, by raw name), the process
// whose listing they came from (0 for an empty set), and the complete
// listings that process had written by then.
type Publish struct {
	At       time.Duration
	Inc      int
	Tools    []string
	Procs    []int // the distinct processes the tools name
	Complete [][]string
	Newest   int  // the newest process supervisor Inc had opened by then
	Killed   bool // conn had terminated that process before the swap
}

// Move is a transition of supervisor Inc's connection machine.
type Move struct {
	Inc int
	conn.Transition
	At time.Duration
}

// Call is one request of the host: Kind is the step that made it (call,
// call-kept, reconnect, subscribe, unsubscribe, roots).
type Call struct {
	ID      string
	Kind    string
	Inc     int
	Tool    string // the tool's raw name; the URI for subscribe and unsubscribe
	Start   time.Duration
	Bound   time.Duration // the latest it may return: its deadline, or what CallTimeout allows
	Returns int
	End     time.Duration
	Err     error
	Text    string // the result's text
	IsError bool
	Repeat  int // how many times the server may execute it (1, or 2 when a held call may be sent again)
}

// Close is the Close of supervisor Inc and what was left right after.
type Close struct {
	At     time.Duration
	Inc    int
	Err    error
	Alive  []int    // its processes not yet exited
	Tools  []string // the server's tools still registered
	Listed []string // the server's resources and prompts still in the catalog
	State  conn.State
	Reason string
}

// Calm is what the run found after the world had been calm long enough
// for the supervisor to recover.
type Calm struct {
	At       time.Duration
	Inc      int // 0: no supervisor runs
	State    conn.State
	Tools    []string // the server's registered tools, "name=description" by raw name
	Procs    []int    // the processes the registered tools name
	Listed   []string // the server's tool list
	Live     int      // the newest live process of the supervisor
	Subs     []string // the supervisor's subscriptions
	Served   []string // the subscriptions the live process has
	Protocol string
	Deaf     bool // the live process's server sends no list changes (see process.deaf)
	// With Setup.Catalog, the catalog's resource URIs and prompt names
	// of the server, sorted.
	Catalog bool
	Listing []string
}

// Logged is the log line of supervisor Inc's move into State.
type Logged struct {
	At    time.Duration
	Inc   int
	State conn.State
	Msg   string
}

// StartError is a Start that failed.
type StartError struct {
	At  time.Duration
	Inc int
	Err error
}
