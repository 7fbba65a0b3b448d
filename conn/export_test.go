package conn

import "github.com/mcpfsm/mcpfsm/conn/internal/proc"

// ReconnectWaiters returns how many Reconnect calls wait for the attempt
// in flight, read on the supervisor's loop.
func ReconnectWaiters(s *Supervisor) int {
	n := make(chan int, 1)
	s.post(func() { n <- len(s.waiters) })
	return <-n
}

// ObserveSteps makes the supervisor started with cfg report every step of
// its inner machines (tool-sync, generation) to f, with the machine's name.
func ObserveSteps(cfg *Config, f func(machine, from, event, when, to string)) { cfg.onStep = f }

// The environment helpers, for the tests of what reaches a child.
var (
	ChildEnv         = proc.AllowedEnv
	InheritedEnv     = proc.InheritedEnv
	IsDefaultEnvName = proc.IsDefaultEnvName
)

// The inner machines' tables, for the tests that drive them.
type (
	GenState  = genState
	GenEvent  = genEvent
	SyncState = syncState
	SyncEvent = syncEvent
)

var (
	GenerationTable = generationTable
	SyncTable       = syncTable
)

const (
	GenClosing  = genClosing
	GenExpired  = genExpired
	GenReleased = genReleased
	GenWentBad  = genWentBad
	GenClose    = genClose
	GenExpire   = genExpire
	SyncChanged = syncChanged
	SyncListed  = syncListed
)
