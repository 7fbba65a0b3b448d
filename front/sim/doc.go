// Package sim simulates the gateway: a front (package front) over a real
// host (package host) of two servers, one per-client and one shared,
// built from a config.Config; the host's starters swap each supervisor's
// transport for an in-memory server whose tools record whose requests
// reach them. The front is served over in-memory Streamable HTTP to
// several clients of both eras (2025-11-25 sessions and 2026-07-28
// requests), in a testing/synctest bubble, so that simulated time drives
// every timer of the front, its instances and the clients.
//
// A seed chooses everything: the idle and session bounds, how long an
// instance takes to start, which clients join, call which tools, answer,
// abandon or replay (as another client) the rounds of a bridged call,
// change their roots (also while their instance starts), close their
// sessions or vanish, which backends crash (shared, per-client, or the
// shared server's instance for 2026-07-28 clients), and which reloads
// the host applies: the driver rewrites the host's config file and tells
// the host's watcher (host.Watcher, which reloads it as serve's does;
// host.WatchOptions.Changes stands for fsnotify, whose blocking read
// cannot run in a bubble), a restart of either server, which closes its
// instances, or a change of its rate limit alone, which keeps them. After every step the driver checks the invariants on the
// history so far; a run that stops making progress is a violation of
// Progress, reported with the stacks of the goroutines blocked on locks.
//
// Its test (go test ./front/sim -seeds N) runs seeds; with the tag
// simbugs and -planted it also plants each bug of front/internal/bugs and
// looks for it within as many seeds; -replay N runs N seeds twice and
// compares their logs. The simulator lives in the package's test files,
// and the package exports nothing.
package sim
