package oteltracing_test

import (
	"bufio"
	"context"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/mcpfsm/mcpfsm/internal/otlptest"
	"github.com/mcpfsm/mcpfsm/oteltracing"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

const deadline = 20 * time.Second

// secretArg is an argument value: no span may hold it.
const secretArg = "secret-arg-4f1c"

// traceOneCall is a front's traced tools/call of echo on a supervisor of
// transport: the request span from the client's _meta, the backend
// call's span, the call, both ends, and the tracer's shutdown (which
// exports the spans to recv).
func traceOneCall(t *testing.T, recv *otlptest.Receiver, transport conn.Transport) {
	t.Helper()
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_SERVICE_NAME", "")
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	tr, err := oteltracing.FromEnv(ctx, oteltracing.EnvOptions{Version: "v-test"})
	if err != nil || tr == nil {
		t.Fatalf("FromEnv = %v, %v; want a Tracer", tr, err)
	}
	reg := conn.NewRegistry()
	sup, err := conn.Start(ctx, tr.Instrument(conn.Config{Name: "fix", Transport: transport, Registry: reg,
		FailOnStartupError: true, Logger: quiet()}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := sup.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	tool, ok := reg.Lookup("mcp__fix__echo")
	if !ok {
		t.Fatal("no tool echo")
	}
	meta := map[string]any{"traceparent": clientTP, "tracestate": "vendor=x", "baggage": "tenant=acme"}
	rctx, rs := tr.StartRequest(ctx, oteltracing.Request{Method: "tools/call", Name: "mcp__fix__echo", Session: "s1", Server: "fix", Meta: meta})
	cctx, cs := tr.StartCall(rctx, oteltracing.Call{Server: "fix", Method: "tools/call", Name: "echo"})
	if _, err := tool.Call(cctx, map[string]any{"text": secretArg}); err != nil {
		t.Fatal(err)
	}
	cs.End("ok", nil)
	rs.End("ok", nil)
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// checkTrace checks what the backend received (got) and what recv got:
// two spans in the client's trace, the request span child of the client's
// span and parent of the call span, whose id the backend's traceparent
// names.
func checkTrace(t *testing.T, recv *otlptest.Receiver, got fixture.MetaRecord, header bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	spans, err := recv.Await(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 2 {
		t.Fatalf("%d spans exported, want 2: %+v", len(spans), spans)
	}
	var req, call otlptest.Span
	for _, s := range spans {
		switch s.Kind {
		case tracepb.Span_SPAN_KIND_SERVER:
			req = s
		case tracepb.Span_SPAN_KIND_CLIENT:
			call = s
		}
	}
	if req.TraceID != clientTrace || req.ParentSpanID != clientSpan {
		t.Errorf("request span: trace %s parent %s, want the client's %s / %s", req.TraceID, req.ParentSpanID, clientTrace, clientSpan)
	}
	if call.TraceID != clientTrace || call.ParentSpanID != req.SpanID || call.SpanID == "" {
		t.Errorf("call span: trace %s parent %s, want the request span %s", call.TraceID, call.ParentSpanID, req.SpanID)
	}
	if req.Name != "tools/call mcp__fix__echo" || call.Name != "tools/call echo" {
		t.Errorf("span names %q, %q", req.Name, call.Name)
	}
	if req.Service != "mcpfsm" || req.Scope != oteltracing.ScopeName {
		t.Errorf("service %q scope %q", req.Service, req.Scope)
	}
	if req.Attributes["mcp.session.id"] != "s1" || call.Attributes["gen_ai.tool.name"] != "echo" || call.Attributes["mcpfsm.server.name"] != "fix" {
		t.Errorf("attributes: request %v, call %v", req.Attributes, call.Attributes)
	}
	for _, s := range spans {
		for k, v := range s.Attributes {
			if strings.Contains(v, secretArg) {
				t.Errorf("span %q holds the argument's value in %s", s.Name, k)
			}
		}
	}
	want := "00-" + clientTrace + "-" + call.SpanID + "-01"
	if tp := got.MetaString("traceparent"); tp != want {
		t.Errorf("the backend's _meta traceparent = %q, want %q (same trace, the call span as parent)", tp, want)
	}
	if got.MetaString("tracestate") != "vendor=x" || got.MetaString("baggage") != "tenant=acme" {
		t.Errorf("the backend's _meta lost the client's tracestate or baggage: %v", got.Meta)
	}
	if header && got.Traceparent != want {
		t.Errorf("the backend's traceparent header = %q, want %q", got.Traceparent, want)
	}
	if !header && got.Traceparent != "" {
		t.Errorf("a stdio backend saw a header %q", got.Traceparent)
	}
}

// TestTraceIntoStdioBackend: one trace from the client's _meta through
// the proxy's spans into a stdio server's _meta.
func TestTraceIntoStdioBackend(t *testing.T) {
	recv := otlptest.New(t)
	log := &fixture.MetaLog{}
	cmd := conn.Command(fixture.Build(t), "-record-meta")
	cmd.Stderr = log
	traceOneCall(t, recv, cmd)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	got, err := log.Await(ctx, "tools/call")
	if err != nil {
		t.Fatal(err)
	}
	checkTrace(t, recv, got, false)
}

// TestTraceIntoHTTPBackend: the same into a Streamable HTTP server,
// which also gets the traceparent header.
func TestTraceIntoHTTPBackend(t *testing.T) {
	recv := otlptest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	proc := exec.CommandContext(ctx, fixture.Build(t), "-http", "-record-meta")
	stderr, err := proc.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = proc.Process.Kill()
		_ = proc.Wait()
	}()
	log := &fixture.MetaLog{}
	url := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if u, ok := strings.CutPrefix(line, "testserver: listening "); ok {
				url <- u
			}
			io.WriteString(log, line+"\n")
		}
	}()
	var endpoint string
	select {
	case endpoint = <-url:
	case <-ctx.Done():
		t.Fatal("the fixture server never listened")
	}
	traceOneCall(t, recv, conn.Streamable(endpoint))
	got, err := log.Await(ctx, "tools/call")
	if err != nil {
		t.Fatal(err)
	}
	checkTrace(t, recv, got, true)
}
