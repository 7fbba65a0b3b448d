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
package conn
