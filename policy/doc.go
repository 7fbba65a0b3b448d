// Package policy holds mcpfsm's reconnect configuration, its resolution into
// a validated [Policy], the bounded exponential backoff schedule and the
// per-outage retry budget ([Budget]).
//
// # Defaults
//
// [Default] is: enabled, initial delay 500 ms, maximum delay 30 s, 10
// attempts per outage, no jitter. Its schedule is 500ms, 1s, 2s, 4s, 8s,
// 16s, 30s, 30s, 30s, 30s: about 2.5 minutes (151.5 s) of retrying before
// giving up.
//
// # Configuration format
//
// A reconnect object in JSON, every key optional (omitted or null means the
// default, and a null document means all defaults):
//
//	{
//	  "enabled": true,          // boolean
//	  "initialDelayMs": 500,    // whole milliseconds, 1 .. 2147483647
//	  "maxDelayMs": 30000,      // whole milliseconds, initialDelayMs .. 2147483647
//	  "maxAttempts": 10,        // integer, 1 .. 2147483647
//	  "jitter": 0,              // fraction, 0 .. 1
//	  "probeIntervalMs": 0      // whole milliseconds, 0 (off) .. 2147483647
//	}
//
// (Comments are for this page only; the input is plain JSON.) [Parse]
// decodes and resolves it; [Resolve] resolves a [Config] decoded elsewhere
// or built in code; [Policy.Validate] judges a Policy built in code. The
// upper delay bound is the JavaScript timer maximum ([DelayLimitMs]), so a
// config file means the same thing to a host written in JavaScript. Unknown keys, wrong JSON types, fractional milliseconds or
// attempts, out-of-range values and trailing data are rejected; every error
// matches [ErrInvalid] and carries [*FieldError] values whose messages start
// with the caller's path:
//
//	servers.fs.reconnect.initialDelayMs must be less than or equal to maxDelayMs
//	servers.fs.reconnect.retries is not a reconnect option (known options: enabled, initialDelayMs, maxDelayMs, maxAttempts, jitter, probeIntervalMs)
//
// # Schedule
//
// The delay before retry n (1-based) is
//
//	min(MaxDelay, InitialDelay * 2^(n-1))
//
// computed without overflow for any n ([Policy.Delay]).
//
// # Outage budget
//
// One outage may use MaxAttempts retries. A [Budget] is told when a
// connection comes up ([Budget.Up]) and when an attempt fails or a
// connection is lost ([Budget.Down]); Down answers retry-after-delay or
// exhausted. A failure only starts a fresh budget when the connection that
// just ended had stayed up for at least the stability window, which is
// MaxDelay ([Policy.StabilityWindow]). This is the crash-loop protection:
// a server that crashes now and then recovers for ever, while a server whose
// connects succeed but die within seconds exhausts its budget instead of
// restarting for ever, which a counter reset on every successful connect
// would allow. Time comes from an injected [clock.Clock], so tests use a
// mock clock and never sleep.
//
// # Probing after giving up
//
// A spent budget stops retrying. With ProbeInterval (probeIntervalMs) set,
// a supervisor in that state tries one attempt every interval, as hosts
// that park a dead server and look again later do: a success recovers
// with a fresh budget, a failure waits for the next probe. Zero, the
// default, waits for a human (conn.Supervisor.Reconnect or a restart).
//
// # Jitter
//
// With Jitter j > 0 a Budget spreads each delay d uniformly over
// [d*(1-j), d*(1+j)], the symmetric scheme of gRPC, drawing from an
// injectable random source ([WithRand]). The mean stays on the schedule
// above; clients that lost the same server together no longer retry in
// lock-step. [Policy.JitteredDelay] is the pure form of the computation.
package policy
