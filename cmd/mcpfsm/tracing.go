package main

import (
	"context"
	"net/http"

	"github.com/mcpfsm/mcpfsm/front"
	"github.com/mcpfsm/mcpfsm/tracing"
)

// frontTracer is a tracing.Tracer as the front's Tracer.
type frontTracer struct{ t *tracing.Tracer }

var _ front.Tracer = frontTracer{}

func (f frontTracer) Request(ctx context.Context, method, name, session, server string, meta map[string]any,
	header http.Header) (context.Context, func(string, error)) {
	ctx, span := f.t.StartRequest(ctx, tracing.Request{Method: method, Name: name, Session: session, Server: server,
		Meta: meta, Header: header})
	return ctx, span.End
}

func (f frontTracer) Call(ctx context.Context, server, method, name string) (context.Context, func(string, error)) {
	ctx, span := f.t.StartCall(ctx, tracing.Call{Server: server, Method: method, Name: name})
	return ctx, span.End
}

func (f frontTracer) Propagate(ctx context.Context, set func(key, value string)) {
	f.t.Propagate(ctx, set)
}

// startTracing starts the tracer the OpenTelemetry environment asks for:
// nil (tracing off, costing nothing) unless OTEL_TRACES_EXPORTER or an
// OTLP endpoint says otherwise.
func startTracing(ctx context.Context) (front.Tracer, func(context.Context) error, error) {
	t, err := tracing.FromEnv(ctx, tracing.EnvOptions{Version: version()})
	if err != nil || t == nil {
		return nil, func(context.Context) error { return nil }, err
	}
	return frontTracer{t}, t.Shutdown, nil
}
