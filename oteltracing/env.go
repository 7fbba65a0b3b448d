package oteltracing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// EnvOptions are what [FromEnv] cannot read from the environment.
type EnvOptions struct {
	// Getenv reads the variables that decide whether and how to trace;
	// nil means os.Getenv. The exporters themselves read their
	// OTEL_EXPORTER_OTLP_* variables from the process environment.
	Getenv func(string) string
	// Console is where the console exporter writes; nil means os.Stderr
	// (stdout may be a stdio front's MCP channel).
	Console io.Writer
	// Version is the service.version of the spans' resource; "" leaves
	// it out.
	Version string
}

// Environment variables FromEnv reads itself.
const (
	EnvExporter       = "OTEL_TRACES_EXPORTER"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
)

// ServiceName is the spans' service.name unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES names another.
const ServiceName = "mcpfsm"

// FromEnv returns the Tracer the standard OpenTelemetry environment asks
// for (see the package doc), or nil when tracing is off. Errors name the
// variable and the values it takes. Call [Tracer.Shutdown] before exit to
// export the spans still queued.
func FromEnv(ctx context.Context, o EnvOptions) (*Tracer, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(strings.TrimSpace(getenv(EnvSDKDisabled)), "true") {
		return nil, nil
	}
	var names []string
	for n := range strings.SplitSeq(getenv(EnvExporter), ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		if getenv(EnvEndpoint) == "" && getenv(EnvTracesEndpoint) == "" {
			return nil, nil // off by default
		}
		names = []string{"otlp"}
	}
	if len(names) == 1 && names[0] == "none" {
		return nil, nil
	}
	var exporters []sdktrace.SpanExporter
	shutdownAll := func() {
		for _, e := range exporters {
			_ = e.Shutdown(ctx)
		}
	}
	for _, n := range names {
		var e sdktrace.SpanExporter
		var err error
		switch n {
		case "otlp":
			e, err = otlpExporter(ctx, getenv)
		case "console":
			w := o.Console
			if w == nil {
				w = os.Stderr
			}
			e, err = stdouttrace.New(stdouttrace.WithWriter(w))
		case "none":
			err = fmt.Errorf("$%s=%q: none cannot be given with other exporters", EnvExporter, getenv(EnvExporter))
		default:
			err = fmt.Errorf("$%s: exporter %q is not supported: use otlp, console or none", EnvExporter, n)
		}
		if err != nil {
			shutdownAll()
			return nil, fmt.Errorf("tracing: %w", err)
		}
		exporters = append(exporters, e)
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", ServiceName)}
	if o.Version != "" {
		attrs = append(attrs, attribute.String("service.version", o.Version))
	}
	// The environment's resource comes last: OTEL_SERVICE_NAME wins.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil && res == nil {
		shutdownAll()
		return nil, fmt.Errorf("tracing: the resource of $OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	for _, e := range exporters {
		opts = append(opts, sdktrace.WithBatcher(e))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	t := New(tp)
	t.shutdown = tp.Shutdown
	return t, nil
}

// otlpExporter is the OTLP exporter of the protocol the environment
// names: http/protobuf (the default) or grpc.
func otlpExporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error) {
	proto, from := getenv(EnvTracesProtocol), EnvTracesProtocol
	if proto == "" {
		proto, from = getenv(EnvProtocol), EnvProtocol
	}
	switch strings.TrimSpace(proto) {
	case "", "http/protobuf":
		return otlptracehttp.New(ctx)
	case "grpc":
		return otlptracegrpc.New(ctx)
	case "http/json":
		return nil, fmt.Errorf("$%s=http/json is not supported: use http/protobuf or grpc", from)
	}
	return nil, errors.New("$" + from + "=" + fmt.Sprintf("%q", proto) + " is not an OTLP protocol: use http/protobuf or grpc")
}
