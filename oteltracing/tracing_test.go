package oteltracing_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/oteltracing"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// The client's trace context, as an agent sends it in _meta.
const (
	clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpan  = "00f067aa0ba902b7"
	clientTP    = "00-" + clientTrace + "-" + clientSpan + "-01"
)

func recorder(t *testing.T) (*oteltracing.Tracer, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return oteltracing.New(tp), rec
}

func attrMap(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// TestRequestContinuesTheClientsTrace: the request span's parent is the
// client's _meta traceparent, the call span is its child, and what the
// call propagates names the call span in the client's trace, with the
// client's tracestate and baggage.
func TestRequestContinuesTheClientsTrace(t *testing.T) {
	tr, rec := recorder(t)
	meta := map[string]any{"traceparent": clientTP, "tracestate": "vendor=x", "baggage": "tenant=acme", "progressToken": 7}
	ctx, rs := tr.StartRequest(context.Background(), oteltracing.Request{
		Method: "tools/call", Name: "mcp__gh__get_issue", Session: "sess-1", Server: "gh", Meta: meta})
	ctx, cs := tr.StartCall(ctx, oteltracing.Call{Server: "gh", Method: "tools/call", Name: "get_issue"})
	sent := map[string]string{}
	tr.Propagate(ctx, func(k, v string) { sent[k] = v })
	cs.End("ok", nil)
	rs.End("ok", nil)

	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans ended, want 2", len(spans))
	}
	call, req := spans[0], spans[1]
	if got := req.Parent(); got.TraceID().String() != clientTrace || got.SpanID().String() != clientSpan || !got.IsRemote() {
		t.Errorf("request span's parent = %v, want the client's span %s of trace %s", got, clientSpan, clientTrace)
	}
	if req.SpanKind() != trace.SpanKindServer || call.SpanKind() != trace.SpanKindClient {
		t.Errorf("kinds: request %v, call %v; want server, client", req.SpanKind(), call.SpanKind())
	}
	if call.Parent().SpanID() != req.SpanContext().SpanID() || call.SpanContext().TraceID().String() != clientTrace {
		t.Errorf("call span is not the request span's child in the client's trace")
	}
	want := map[string]string{
		"traceparent": "00-" + clientTrace + "-" + call.SpanContext().SpanID().String() + "-01",
		"tracestate":  "vendor=x",
		"baggage":     "tenant=acme",
	}
	if diff := cmp.Diff(want, sent); diff != "" {
		t.Errorf("propagated (-want +got):\n%s", diff)
	}
	if req.Name() != "tools/call mcp__gh__get_issue" || call.Name() != "tools/call get_issue" {
		t.Errorf("names %q, %q", req.Name(), call.Name())
	}
	if diff := cmp.Diff(map[string]string{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "mcp__gh__get_issue", "gen_ai.operation.name": "execute_tool",
		"mcp.session.id": "sess-1", "mcpfsm.server.name": "gh", "mcpfsm.call.outcome": "ok",
	}, attrMap(req.Attributes())); diff != "" {
		t.Errorf("request attributes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "get_issue", "gen_ai.operation.name": "execute_tool",
		"mcpfsm.server.name": "gh", "mcpfsm.call.outcome": "ok",
	}, attrMap(call.Attributes())); diff != "" {
		t.Errorf("call attributes (-want +got):\n%s", diff)
	}
	if req.Status().Code != codes.Unset {
		t.Errorf("an ok request's status is %v", req.Status())
	}
}

// TestRequestParents: without trace context the request starts a trace;
// an HTTP traceparent header serves when _meta has none, and _meta wins
// over it; a malformed traceparent starts a trace.
func TestRequestParents(t *testing.T) {
	tr, rec := recorder(t)
	other := "00-" + strings.Repeat("1", 32) + "-" + strings.Repeat("2", 16) + "-01"
	for _, tc := range []struct {
		name   string
		r      oteltracing.Request
		parent string // the parent's trace id, "" for a new trace
	}{
		{"none", oteltracing.Request{Method: "tools/list"}, ""},
		{"header", oteltracing.Request{Method: "tools/list", Header: http.Header{"Traceparent": {clientTP}}}, clientTrace},
		{"meta wins", oteltracing.Request{Method: "tools/list", Meta: map[string]any{"traceparent": clientTP}, Header: http.Header{"Traceparent": {other}}}, clientTrace},
		{"malformed", oteltracing.Request{Method: "tools/list", Meta: map[string]any{"traceparent": "00-zz-01"}}, ""},
		{"not a string", oteltracing.Request{Method: "tools/list", Meta: map[string]any{"traceparent": 42}}, ""},
	} {
		_, s := tr.StartRequest(context.Background(), tc.r)
		s.End("", nil)
		spans := rec.Ended()
		got := spans[len(spans)-1]
		switch {
		case tc.parent == "" && got.Parent().IsValid():
			t.Errorf("%s: parent %v, want a new trace", tc.name, got.Parent())
		case tc.parent != "" && got.Parent().TraceID().String() != tc.parent:
			t.Errorf("%s: parent trace %v, want %s", tc.name, got.Parent().TraceID(), tc.parent)
		}
		if got.Name() != "tools/list" {
			t.Errorf("%s: name %q", tc.name, got.Name())
		}
	}
}

// TestFailedSpans: a failure's span has status Error and an error.type,
// and never the error's text.
func TestFailedSpans(t *testing.T) {
	tr, rec := recorder(t)
	for _, tc := range []struct {
		outcome string
		err     error
		want    map[string]string
	}{
		{"tool-error", nil, map[string]string{"error.type": "tool_error"}},
		{"error", &jsonrpc.Error{Code: -32602, Message: "bad argument password=hunter2"}, map[string]string{"error.type": "-32602", "rpc.response.status_code": "-32602"}},
		{"rate-limited", nil, map[string]string{"error.type": "rate-limited"}},
		{"timeout", context.DeadlineExceeded, map[string]string{"error.type": "timeout"}},
		{"", context.Canceled, map[string]string{"error.type": "_OTHER"}},
	} {
		_, s := tr.StartRequest(context.Background(), oteltracing.Request{Method: "prompts/get", Name: "p"})
		s.End(tc.outcome, tc.err)
		spans := rec.Ended()
		got := spans[len(spans)-1]
		attrs := attrMap(got.Attributes())
		for k, v := range tc.want {
			if attrs[k] != v {
				t.Errorf("%s: %s = %q, want %q", tc.outcome, k, attrs[k], v)
			}
		}
		if attrs["gen_ai.prompt.name"] != "p" {
			t.Errorf("%s: gen_ai.prompt.name = %q", tc.outcome, attrs["gen_ai.prompt.name"])
		}
		if got.Status().Code != codes.Error {
			t.Errorf("%s: status %v, want Error", tc.outcome, got.Status())
		}
		if len(got.Events()) != 0 || strings.Contains(got.Status().Description, "hunter2") {
			t.Errorf("%s: the error's text was recorded: %v %v", tc.outcome, got.Events(), got.Status())
		}
	}
}

// TestNilTracerIsOff: a nil Tracer does nothing, and leaves a
// supervisor's Config as it was.
func TestNilTracerIsOff(t *testing.T) {
	var tr *oteltracing.Tracer
	ctx := context.Background()
	got, s := tr.StartRequest(ctx, oteltracing.Request{Method: "tools/call", Meta: map[string]any{"traceparent": clientTP}})
	if got != ctx {
		t.Error("a nil Tracer changed the request's ctx")
	}
	got, c := tr.StartCall(got, oteltracing.Call{Method: "tools/call"})
	if got != ctx {
		t.Error("a nil Tracer changed the call's ctx")
	}
	c.End("ok", nil)
	s.End("error", context.Canceled)
	tr.Propagate(ctx, func(k, v string) { t.Errorf("a nil Tracer propagated %s=%s", k, v) })
	if cfg := tr.Instrument(conn.Config{Name: "x"}); cfg.Propagate != nil {
		t.Error("a nil Tracer set Config.Propagate")
	}
	if err := tr.Shutdown(ctx); err != nil {
		t.Error(err)
	}
}

// TestInstrumentKeepsTheHostsHook: a Config's own Propagate still runs.
func TestInstrumentKeepsTheHostsHook(t *testing.T) {
	tr, _ := recorder(t)
	cfg := tr.Instrument(conn.Config{Propagate: func(_ context.Context, set func(string, string)) { set("x-own", "1") }})
	ctx, s := tr.StartRequest(context.Background(), oteltracing.Request{Method: "tools/call"})
	defer s.End("ok", nil)
	sent := map[string]string{}
	cfg.Propagate(ctx, func(k, v string) { sent[k] = v })
	if sent["x-own"] != "1" || !strings.HasPrefix(sent["traceparent"], "00-") {
		t.Errorf("propagated %v, want the host's key and the trace's", sent)
	}
}

func TestCopyMeta(t *testing.T) {
	dst := map[string]any{"progressToken": "p"}
	oteltracing.CopyMeta(dst, map[string]any{"traceparent": clientTP, "baggage": "a=b", "tracestate": 3, "other": "x"})
	want := map[string]any{"progressToken": "p", "traceparent": clientTP, "baggage": "a=b"}
	if diff := cmp.Diff(want, dst); diff != "" {
		t.Errorf("CopyMeta (-want +got):\n%s", diff)
	}
	oteltracing.CopyMeta(dst, nil)
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
