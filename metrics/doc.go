// Package metrics measures mcpfsm supervisors with OpenTelemetry metrics,
// so that package conn itself depends on no telemetry library.
//
// A [Metrics] holds the instruments, created from any
// metric.MeterProvider (the OpenTelemetry SDK's, a vendor's, or the one
// [Prometheus] returns). A host wires each supervisor to it with
// [Metrics.Start] (or, step by step, [Metrics.Instrument] before
// conn.Start and [Metrics.Track] after it). Supervisors may come and go
// at run time, as on a configuration reload: a supervisor stops being
// reported once it is disposed.
//
// # Instruments
//
// Names and units follow the OpenTelemetry conventions: durations are
// histograms in seconds, counts have curly-brace units, and attributes are
// namespaced. The tool-call histogram is the one the MCP semantic
// conventions define; the others are mcpfsm's own, under "mcpfsm.".
//
//	mcp.client.operation.duration          histogram, s: every tool call
//	    mcp.method.name        "tools/call"
//	    gen_ai.operation.name  "execute_tool"
//	    gen_ai.tool.name       the tool's name on the wire
//	    mcpfsm.server.name     the supervisor's Name
//	    mcpfsm.call.outcome    a conn.Outcome: ok, tool-error, unavailable,
//	                           timeout, canceled, error
//	    error.type             when the call failed: "tool_error" (a result
//	                           with isError), the JSON-RPC error code, or
//	                           "unavailable", "timeout", "canceled", "_OTHER"
//	    rpc.response.status_code  the JSON-RPC error code, when there is one
//	mcpfsm.connection.state                gauge, {state}: 1 for the current state
//	                                       of each server, 0 for the others
//	    mcpfsm.server.name, mcpfsm.state
//	mcpfsm.connection.tools                gauge, {tool}: tools registered per server
//	    mcpfsm.server.name
//	mcpfsm.connection.transitions          counter, {transition}
//	    mcpfsm.server.name, mcpfsm.transition.from, mcpfsm.transition.to,
//	    mcpfsm.transition.event
//	mcpfsm.connection.reconnect.attempts   counter, {attempt}: reconnect attempts (backoff, Reconnect, probe)
//	                                       started (each backoff that elapsed)
//	    mcpfsm.server.name
//	mcpfsm.caller.refusals                 counter, {refusal}: requests a
//	                                       server's per-caller policy refused
//	                                       ([Metrics.Refused])
//	    mcpfsm.server.name
//	    mcpfsm.refusal.reason  "rate-limit" (rateLimit) or "scope"
//	                           (allowScopes, toolScopes)
//	mcpfsm.connection.outage.duration      histogram, s: from the moment a
//	                                       server became unavailable (an
//	                                       established connection lost, or
//	                                       the first attempt failed) to the
//	                                       end of that outage
//	    mcpfsm.server.name
//	    mcpfsm.outage.end      "recovered" (established again: the time to
//	                           recover) or "closed" (disposed first)
//
// Durations of outages and calls are read on the supervisor's clock
// (conn.Config.Clock), so they are exact under a mock clock in tests.
//
// # Tool calls are recorded in batches
//
// A tool call is not recorded into mcp.client.operation.duration while
// its caller waits: the hook only appends the call (its server, tool,
// outcome, JSON-RPC code and duration) to a bounded queue of the
// [Metrics], which allocates nothing and costs some tens of nanoseconds
// with warm caches (a few hundred after a call's own work has evicted
// them, against a few microseconds for the SDK's record there).
// The queue is recorded into the histogram, many calls in a row with warm
// caches, at the next collection: the Meter's callback records it before
// the MeterProvider reads its instruments, so every call that ended before
// a collection (a reader's Collect, a periodic export, a Prometheus
// scrape) is in it, and none is counted twice. In between, a queue that
// fills (256 calls) is recorded by a goroutine started for it, which ends
// when it is done, so an idle Metrics runs no goroutine and needs no
// Close for its calls to be counted; when calls end faster than that
// goroutine records, the call that fills the queue records it itself, so
// memory stays bounded (two queues of 256 calls, some 40 KiB).
// [Metrics.Close] records what is queued, and a call that ends after it is
// recorded at once. The callback is the one of the state and tools gauges:
// a View that drops both of them leaves calls to be recorded only when
// the queue fills.
//
// # Prometheus
//
// [Prometheus] returns a MeterProvider and an http.Handler serving its
// metrics in the Prometheus text format. It uses OpenTelemetry's own
// Prometheus exporter (go.opentelemetry.io/otel/exporters/prometheus)
// rather than instruments of prometheus/client_golang: the instruments
// are declared once, in OpenTelemetry, and the same ones feed an OTLP
// pipeline or a scrape, named by the standard OpenTelemetry-to-Prometheus
// translation (mcp.client.operation.duration becomes
// mcp_client_operation_duration_seconds, a counter gains _total). The
// exporter is itself built on client_golang: a host with a client_golang
// registry of its own builds the exporter with its WithRegisterer option
// and passes a MeterProvider reading from it to [New].
package metrics
