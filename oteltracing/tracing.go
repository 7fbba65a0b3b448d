package oteltracing

import (
	"context"
	"errors"
	"github.com/mcpfsm/mcpfsm/internal/tracectx"
	"net/http"
	"strconv"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the spans: the name the
// Tracer is obtained under.
const ScopeName = "github.com/mcpfsm/mcpfsm/oteltracing"

// MetaKeys are the _meta keys of trace context (SEP-414).
var MetaKeys = tracectx.Keys

// Attribute keys.
const (
	keyMethod      = "mcp.method.name"
	keySession     = "mcp.session.id"
	keyToolName    = "gen_ai.tool.name"
	keyPromptName  = "gen_ai.prompt.name"
	keyOperation   = "gen_ai.operation.name"
	keyErrorType   = "error.type"
	keyRPCCode     = "rpc.response.status_code"
	keyServer      = "mcpfsm.server.name"
	keyCallOutcome = "mcpfsm.call.outcome"
)

// Tracer makes the spans of a proxy. A nil *Tracer is tracing off: its
// methods return at once, and its spans do nothing. A Tracer is safe for
// concurrent use.
type Tracer struct {
	tracer   trace.Tracer
	prop     propagation.TextMapPropagator
	shutdown func(context.Context) error
}

// New returns a Tracer whose spans go to tp (an SDK TracerProvider, a
// vendor's, or a test's), with W3C trace context and baggage as the
// propagation format. Shutting tp down is the caller's.
func New(tp trace.TracerProvider) *Tracer {
	return &Tracer{
		tracer: tp.Tracer(ScopeName),
		prop:   propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
}

// Shutdown exports the spans still queued and stops the exporters of a
// Tracer from [FromEnv], within ctx's deadline. It does nothing for a nil
// Tracer or one from New.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	return t.shutdown(ctx)
}

// Request is a request a front serves, as its span records it.
type Request struct {
	// Method is the request's MCP method, such as "tools/call".
	Method string
	// Name is the tool's or prompt's name as the client gave it; "" for
	// other methods.
	Name string
	// Session is the front session's id (Mcp-Session-Id); "" when none.
	Session string
	// Server is the server that answers, when the front knows it.
	Server string
	// Meta is the request's params._meta: its traceparent, tracestate
	// and baggage are the span's parent.
	Meta map[string]any
	// Header is the HTTP request's header, if any: its traceparent is
	// the parent when Meta has none.
	Header http.Header
}

// Call is a call a front makes to a backend server.
type Call struct {
	// Server is the server called.
	Server string
	// Method is the MCP method, such as "tools/call".
	Method string
	// Name is the tool's or prompt's name on the server; "" for other
	// methods.
	Name string
}

// Span is a span being recorded; the zero Span, which a nil Tracer
// returns, does nothing.
type Span struct{ s trace.Span }

// StartRequest starts the span of a front request r, a SERVER span whose
// parent is the client's trace context in r.Meta (or r.Header), and
// returns ctx with the span and the client's baggage in it: the ctx the
// request's backend call is made under. End the span with [Span.End].
func (t *Tracer) StartRequest(ctx context.Context, r Request) (context.Context, Span) {
	if t == nil {
		return ctx, Span{}
	}
	ctx = t.prop.Extract(ctx, metaCarrier(r.Meta))
	if !trace.SpanContextFromContext(ctx).IsValid() && r.Header != nil {
		ctx = t.prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
	}
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = appendAttrs(attrs, r.Method, r.Name, r.Server)
	if r.Session != "" {
		attrs = append(attrs, attribute.String(keySession, r.Session))
	}
	ctx, s := t.tracer.Start(ctx, spanName(r.Method, r.Name), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	return ctx, Span{s}
}

// StartCall starts the span of a backend call c, a CLIENT span child of
// ctx's (the request's) span, and returns ctx with it: make the call
// under that ctx, on a supervisor whose Config went through
// [Tracer.Instrument], and the backend's request carries the span's
// context.
func (t *Tracer) StartCall(ctx context.Context, c Call) (context.Context, Span) {
	if t == nil {
		return ctx, Span{}
	}
	attrs := appendAttrs(make([]attribute.KeyValue, 0, 5), c.Method, c.Name, c.Server)
	ctx, s := t.tracer.Start(ctx, spanName(c.Method, c.Name), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, Span{s}
}

func spanName(method, name string) string {
	if name == "" {
		return method
	}
	return method + " " + name
}

func appendAttrs(attrs []attribute.KeyValue, method, name, server string) []attribute.KeyValue {
	attrs = append(attrs, attribute.String(keyMethod, method))
	switch {
	case name == "":
	case method == "tools/call":
		attrs = append(attrs, attribute.String(keyToolName, name), attribute.String(keyOperation, "execute_tool"))
	case method == "prompts/get":
		attrs = append(attrs, attribute.String(keyPromptName, name))
	}
	if server != "" {
		attrs = append(attrs, attribute.String(keyServer, server))
	}
	return attrs
}

// End ends the span with outcome (a conn.Outcome word, or audit's denied
// or rate-limited) and err, the request's error if it failed. Anything
// but "ok" and "" is a failure: the span's status is Error, with an
// error.type. Only the outcome and the JSON-RPC code are recorded, never
// err's text, which may quote arguments.
func (s Span) End(outcome string, err error) {
	if s.s == nil {
		return
	}
	if outcome != "" {
		s.s.SetAttributes(attribute.String(keyCallOutcome, outcome))
	}
	if outcome != "" && outcome != string(conn.OutcomeOK) || err != nil {
		var rpc *jsonrpc.Error
		errType := outcome
		switch {
		case outcome == string(conn.OutcomeToolError):
			errType = "tool_error"
		case errors.As(err, &rpc):
			code := strconv.FormatInt(rpc.Code, 10)
			errType = code
			s.s.SetAttributes(attribute.String(keyRPCCode, code))
		case errType == "":
			errType = "_OTHER"
		}
		s.s.SetAttributes(attribute.String(keyErrorType, errType))
		s.s.SetStatus(codes.Error, errType)
	}
	s.s.End()
}

// Propagate injects the trace context of ctx's span (and ctx's baggage)
// through set: it is the conn.Config.Propagate of a traced supervisor
// (see [Tracer.Instrument]).
func (t *Tracer) Propagate(ctx context.Context, set func(key, value string)) {
	if t == nil {
		return
	}
	t.prop.Inject(ctx, setCarrier(set))
}

// Instrument returns cfg with its Propagate hook set to the tracer's
// (after cfg's own, if it has one), so that every request the supervisor
// sends carries the trace context of its ctx. A nil Tracer returns cfg
// unchanged.
func (t *Tracer) Instrument(cfg conn.Config) conn.Config {
	if t == nil {
		return cfg
	}
	if own := cfg.Propagate; own != nil {
		cfg.Propagate = func(ctx context.Context, set func(key, value string)) {
			own(ctx, set)
			t.Propagate(ctx, set)
		}
	} else {
		cfg.Propagate = t.Propagate
	}
	return cfg
}

// CopyMeta copies the trace context keys (MetaKeys) of src, a client
// request's _meta, into dst, the _meta of the backend call: with tracing
// off the backend then joins the client's trace; with it on,
// [Tracer.Propagate] replaces them with the call span's context.
func CopyMeta(dst, src map[string]any) { tracectx.Copy(dst, src) }

// metaCarrier reads trace context from a request's _meta.
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

func (m metaCarrier) Set(key, value string) { m[key] = value }

func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// setCarrier writes trace context through conn's set function.
type setCarrier func(key, value string)

func (setCarrier) Get(string) string       { return "" }
func (f setCarrier) Set(key, value string) { f(key, value) }
func (setCarrier) Keys() []string          { return nil }
