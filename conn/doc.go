// Package conn supervises one MCP server connection as an explicit state
// machine and keeps its tools registered.
//
// A [Supervisor] (see [Start]) opens a fresh transport, mcp.Client and
// session for every generation, lists the server's tools and publishes
// them to a [Registry] under stable public names ([PublicToolName]). When
// the session ends it reconnects with the bounded exponential backoff and
// outage budget of package policy, re-lists the tools and swaps them in
// all or nothing. It gives up cleanly ([Exhausted]) when the budget is
// spent, and never lets two processes of one server run at once: a retired
// generation must confirm its process is gone (the close barrier, bounded
// by Config.CloseTimeout) before the next one starts.
//
// Every state change goes through the connection machine declared in
// [Table]; the states' phrases make the vocabulary fixed: a server that
// never came up is reported as "connection failed" ([FailedRetrying],
// [FailedDisabled], a [*FailedError]), one that was up and dropped as
// "connection lost" ([LostReconnecting], [LostDisabled], a [*LostError]).
//
// During an outage the last good tools stay registered and their calls
// fail fast with an error matching [ErrUnavailable]. Time comes from
// Config.Clock, so every timing rule can be tested on a mock clock.
//
// # Operating a supervisor
//
// Every failure or loss says what the server did: an HTTP server's error
// answer is a [*HTTPError] inside the [*FailedError] or [*LostError] (and
// its Retry-After is a floor for the next delay), and the transition's one
// log line ends with that cause. A failure no wait can fix (a missing or
// non-executable command, a missing working directory, a host that does
// not resolve) is a [*PermanentError] matching [ErrPermanent]: after one
// confirming retry the supervisor stops in [FailedPermanent] and its log
// line names the fix. [Supervisor.Reconnect] starts an attempt at once
// from any state that waits or has stopped, and returns its outcome; a
// policy with a ProbeInterval lets [Exhausted] try again by itself.
//
// # The rest of the session
//
// Supervision costs nothing the SDK offers; each feature survives
// reconnects:
//
//   - Config.Client takes the SDK's own *mcp.ClientOptions. Use it when a
//     server calls the host: elicitation, sampling, and notifications
//     (logging, progress, resource updates, list changes). Every
//     generation's client gets the handlers; the supervisor's own
//     tool-list handling runs alongside them, and a handler that blocks
//     delays only later handler calls, never the supervisor (see
//     Config.Client for the exact rules).
//   - [Supervisor.WithSession] runs a function with the current
//     *mcp.ClientSession, bounded like a tool call, and fails fast with
//     [ErrUnavailable] during an outage. Use it for any request conn has no
//     method for: completion/complete, logging/setLevel, a resource read
//     outside a catalog, and whatever the SDK adds.
//   - A [Catalog] (Config.Catalog) lists the resources, resource templates
//     and prompts of every server that shares it, under stable names, and
//     re-lists them on list_changed with the same all-or-nothing swap as
//     tools. Use it to show a model what it can read, and read through it.
//   - [Supervisor.SetRoots] (and Config.Roots) and [Supervisor.Subscribe]
//     are re-sent to every new generation.
//   - [HTTP] takes a Header sent with every request to the endpoint's
//     origin (never to another origin a redirect leads to) and an
//     OAuthHandler whose tokens survive reconnects.
//
// # Secrets
//
// The errors a supervisor records and logs (Status.LastErr,
// Transition.Err, a tool call's error) have their messages redacted: an
// endpoint URL's userinfo and query values, credential-shaped NAME=value
// pairs (names with TOKEN, SECRET, PASSWORD, API_KEY and the like), bearer tokens and tokens of a well-known
// shape read REDACTED. So do [HTTPError.Body] and [ServerExit.Stderr].
// errors.Is and errors.As still reach every error of the chain, whose own
// fields (a *url.Error's URL) are as the SDK made them.
package conn

// Regenerate the committed diagrams of the connection machine from Table.
//go:generate go run ../cmd/fsmdot -write ../diagrams
