// Package otlptest is an OTLP/HTTP trace receiver for tests: an
// httptest server on loopback that decodes the exporters' protobuf
// export requests (POST /v1/traces) and keeps their spans, so that a test
// checks which spans a process exported, with which parents and
// attributes.
package otlptest

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/mcpfsm/mcpfsm/internal/broadcast"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// maxBody bounds an export request.
const maxBody = 8 << 20

// Span is one exported span, its ids in lower-case hex (a root span's
// ParentSpanID is "").
type Span struct {
	TraceID, SpanID, ParentSpanID string
	TraceState                    string
	Name                          string
	Kind                          tracepb.Span_SpanKind
	// Attributes are the span's attributes, each value as text.
	Attributes map[string]string
	Status     tracepb.Status_StatusCode
	// Service is the service.name of the span's resource.
	Service string
	// Scope is the instrumentation scope's name.
	Scope string
}

// Receiver is the receiver. Its methods are safe for concurrent use.
type Receiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	spans   []Span
	errs    []error
	changed broadcast.Signal
}

// New starts a receiver on 127.0.0.1, closed when t ends.
func New(t testing.TB) *Receiver {
	r := &Receiver{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.export)
	r.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		r.srv.Close()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, err := range r.errs {
			t.Errorf("otlptest: %v", err)
		}
	})
	return r
}

// URL is the receiver's base URL, the value of
// OTEL_EXPORTER_OTLP_ENDPOINT (the exporter adds /v1/traces).
func (r *Receiver) URL() string { return r.srv.URL }

func (r *Receiver) export(w http.ResponseWriter, req *http.Request) {
	body := io.Reader(http.MaxBytesReader(w, req.Body, maxBody))
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			r.fail(w, fmt.Errorf("gzip body: %w", err))
			return
		}
		body = zr
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		r.fail(w, fmt.Errorf("Content-Type %q, want application/x-protobuf", ct))
		return
	}
	data, err := io.ReadAll(body)
	if err != nil {
		r.fail(w, err)
		return
	}
	var ex coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &ex); err != nil {
		r.fail(w, fmt.Errorf("decoding the export request: %w", err))
		return
	}
	var got []Span
	for _, rs := range ex.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				got = append(got, Span{
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentSpanID: hex.EncodeToString(s.GetParentSpanId()), TraceState: s.GetTraceState(),
					Name: s.GetName(), Kind: s.GetKind(), Attributes: attrs(s.GetAttributes()),
					Status: s.GetStatus().GetCode(), Service: service, Scope: ss.GetScope().GetName(),
				})
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.changed.Notify()
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// fail answers a request the receiver cannot read, and fails the test
// when it ends.
func (r *Receiver) fail(w http.ResponseWriter, err error) {
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
	http.Error(w, err.Error(), http.StatusBadRequest)
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.GetKey()] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.GetKey()] = fmt.Sprint(x.IntValue)
		case *commonpb.AnyValue_BoolValue:
			out[kv.GetKey()] = fmt.Sprint(x.BoolValue)
		case *commonpb.AnyValue_DoubleValue:
			out[kv.GetKey()] = fmt.Sprint(x.DoubleValue)
		default:
			out[kv.GetKey()] = v.String()
		}
	}
	return out
}

// Spans returns the spans received so far, in arrival order.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Await returns the spans received once there are at least n, waiting
// until ctx ends.
func (r *Receiver) Await(ctx context.Context, n int) ([]Span, error) {
	return r.await(ctx, n, "", func(Span) bool { return true })
}

// AwaitTrace returns the spans of the trace traceID (lower-case hex)
// received once there are at least n of them, waiting until ctx ends:
// the spans of other traces (a session's initialize, say) do not count.
func (r *Receiver) AwaitTrace(ctx context.Context, traceID string, n int) ([]Span, error) {
	return r.await(ctx, n, " of trace "+traceID, func(s Span) bool { return s.TraceID == traceID })
}

// await returns the received spans that keep holds for once there are
// at least n, waiting until ctx ends; what names them in its error.
func (r *Receiver) await(ctx context.Context, n int, what string, keep func(Span) bool) ([]Span, error) {
	for {
		r.mu.Lock()
		var out []Span
		for _, s := range r.spans {
			if keep(s) {
				out = append(out, s)
			}
		}
		if len(out) >= n {
			r.mu.Unlock()
			return out, nil
		}
		ch := r.changed.C()
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("otlptest: %d of %d spans%s received: %w", len(out), n, what, ctx.Err())
		}
	}
}
