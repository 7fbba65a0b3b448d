// Package oteltracing traces an MCP proxy with OpenTelemetry: a span per
// request a front serves and per call it makes to a backend, joined to
// the client's trace and continued into the backend's, so that one trace
// runs from the agent through the proxy into the server.
//
// # Trace context
//
// A client sends its trace context as bare keys of the request's
// params._meta (SEP-414, final in the 2026-07-28 protocol): W3C
// traceparent, tracestate and baggage. [Tracer.StartRequest] takes them
// as the parent of the request's span (or, when _meta has none, the HTTP
// request's traceparent header). [Tracer.StartCall] starts the backend
// call's span under it, and [Tracer.Propagate], as conn.Config.Propagate
// ([Tracer.Instrument]), puts that span's context into the _meta of the
// request sent to the backend, stdio and HTTP alike, and on HTTP also
// into its traceparent, tracestate and baggage headers. With tracing off,
// [CopyMeta] forwards the client's keys unchanged, so the backend still
// joins the client's trace.
//
// # Spans
//
// Names and attributes follow the OpenTelemetry semantic conventions for
// MCP where they have one; the server and the outcome are mcpfsm's own:
//
//	"{mcp.method.name} {name}"   e.g. "tools/call get_issue"; the front
//	                              request is SERVER, the backend call CLIENT
//	    mcp.method.name           "tools/call", "prompts/get", "resources/read", ...
//	    gen_ai.tool.name          the tool's name (the public one on the front
//	                              request, the server's own on the backend call)
//	    gen_ai.operation.name     "execute_tool" for tools/call
//	    gen_ai.prompt.name        the prompt's name
//	    mcp.session.id            the front session's id, when it has one
//	    mcpfsm.server.name        the server that answers
//	    mcpfsm.call.outcome       ok, tool-error, unavailable, timeout,
//	                              canceled, error, denied, rate-limited
//	    error.type                on failure: "tool_error", the JSON-RPC
//	                              code, or the outcome
//	    rpc.response.status_code  the JSON-RPC error code, when there is one
//
// No argument, result, error message or resource URI is recorded: they
// may hold secrets.
//
// # Exporters
//
// [FromEnv] builds the exporters the standard environment asks for:
// OTEL_TRACES_EXPORTER (otlp, console or none, comma-separated),
// OTEL_EXPORTER_OTLP_PROTOCOL or OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
// (http/protobuf, the default, or grpc), OTEL_EXPORTER_OTLP_ENDPOINT and
// the exporters' other OTEL_EXPORTER_OTLP_* variables, OTEL_SERVICE_NAME
// and OTEL_RESOURCE_ATTRIBUTES, the sampler's OTEL_TRACES_SAMPLER and the
// batcher's OTEL_BSP_*. Tracing is off unless OTEL_TRACES_EXPORTER names
// an exporter or an OTLP endpoint is set, and OTEL_SDK_DISABLED=true
// turns it off. Off, FromEnv returns a nil *Tracer, whose methods return
// at once: tracing costs a nil check.
package oteltracing
