package main

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/mcpfsm/mcpfsm/front"
	"github.com/mcpfsm/mcpfsm/oteltracing"
)

// frontTracer is a oteltracing.Tracer as the front's Tracer.
type frontTracer struct{ t *oteltracing.Tracer }

var _ front.Tracer = frontTracer{}

func (f frontTracer) Request(ctx context.Context, method, name, session, server string, meta map[string]any,
	header http.Header) (context.Context, func(string, error)) {
	ctx, span := f.t.StartRequest(ctx, oteltracing.Request{Method: method, Name: name, Session: session, Server: server,
		Meta: meta, Header: header})
	return ctx, span.End
}

func (f frontTracer) Call(ctx context.Context, server, method, name string) (context.Context, func(string, error)) {
	ctx, span := f.t.StartCall(ctx, oteltracing.Call{Server: server, Method: method, Name: name})
	return ctx, span.End
}

func (f frontTracer) Propagate(ctx context.Context, set func(key, value string)) {
	f.t.Propagate(ctx, set)
}

// startTracing starts the tracer the OpenTelemetry environment asks for:
// nil (tracing off, costing nothing) unless OTEL_TRACES_EXPORTER or an
// OTLP endpoint says otherwise. stop exports the spans left, for at most
// 5s, and logs what it could not.
func startTracing(ctx context.Context, logger *slog.Logger) (_ front.Tracer, stop func(), _ error) {
	t, err := oteltracing.FromEnv(ctx, oteltracing.EnvOptions{Version: version()})
	if err != nil || t == nil {
		return nil, func() {}, err
	}
	return frontTracer{t}, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := t.Shutdown(sctx); err != nil {
			logger.Warn("spans not all exported at exit: " + err.Error())
		}
	}, nil
}
