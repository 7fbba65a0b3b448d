// Package sim is a deterministic simulator of package conn: one seed
// drives a whole run of a supervisor, its server and its host, on
// simulated time, and named invariants are checked after every step.
//
// [Generate] draws a [Schedule] from a seed: the supervisor's settings,
// what each server process does when it starts (refuse, die on the
// discover probe, crash or hang at a request or after a while, answer
// late, outlive its close, fail the client's Close), and the steps of the
// host (concurrent calls with deadlines, Reconnect, SetRoots, Subscribe,
// config reloads, Close) and of the world (tool-list changes, crashes,
// hangs, calm periods), with the simulated time between them. [Run]
// follows a schedule in a testing/synctest bubble: the supervisor's clock
// is the real benbjohnson/clock, which in the bubble reads the bubble's
// time, so minutes of a run pass in milliseconds and waits end exactly
// when they are due. The server is a fresh go-sdk mcp.Server per process,
// over an in-memory link of JSON-RPC messages, behind the seam conn's own
// transports use (conn.Transport returning an mcp.Transport that is also
// a conn.Terminator).
//
// Every invariant of [Invariants] is a function of the run's [History];
// the first one broken is the [Result]'s Violation. [Report] words it with
// the run's last lines and the command that replays it, [WriteTrace]
// writes the run's transitions as an fsm/trace file for fsmdot -trace, and
// [Shrink] looks for a smaller schedule that still breaks it.
//
// A run is exact where the simulator decides: the schedule, the moment of
// every step, the world's timed actions (a late answer, a timed crash or
// hang, a tool's work, a slow exit), a crash the process decides itself
// (on a request, after an answer) and the host's deadlines, which the
// driver runs itself from an agenda, after everything else that woke at
// the same instant (a supervisor's timers) is done, and before its own
// next step. Goroutines of conn, the SDK and the host's requests that run
// at one instant are still ordered by Go's scheduler; the canonical log
// ([Canonical]) sorts the lines of an instant, and two runs of a seed
// compare equal unless those goroutines changed what happened (1 seed in
// 1000 measured: a call that waited for a slot of MaxConcurrentCalls, at
// the instant its connection ended, fails as sent or as not sent).
// docs/reliability.md has the fault model, the
// invariants, the measured replay and reproduction rates, and what the
// simulator cannot see. The tests of this package are its command line.
//
// The simulator is test machinery: all of its code is in this package's
// _test.go files, so no build outside `go test ./conn/sim` compiles it,
// and the package exports nothing. The names this doc links to are those
// of the test build.
//
//	go test -tags simbugs ./conn/sim -run 'TestSim$' -seeds 10000 -planted -replay 100 -v   # as CI
//	go test ./conn/sim -run 'TestSim$' -seed 843 -v               # replay one seed
//	go test ./conn/sim -run 'TestSim$' -schedule FILE -v          # replay a shrunk schedule
//	go test ./conn/sim -run 'TestSim$' -exact -seeds 1000         # run each seed twice, compare the logs
package sim
