package oteltracing_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/mcpfsm/mcpfsm/oteltracing"
)

func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// TestFromEnvIsOffByDefault: without an exporter or an endpoint named,
// or when told so, there is no Tracer.
func TestFromEnvIsOffByDefault(t *testing.T) {
	for _, env := range [][]string{
		nil,
		{"OTEL_TRACES_EXPORTER", "none"},
		{"OTEL_TRACES_EXPORTER", " "},
		{"OTEL_SDK_DISABLED", "true", "OTEL_TRACES_EXPORTER", "console"},
		{"OTEL_SDK_DISABLED", "TRUE", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1"},
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}, // a protocol alone names no exporter
	} {
		tr, err := oteltracing.FromEnv(context.Background(), oteltracing.EnvOptions{Getenv: envOf(env...)})
		if tr != nil || err != nil {
			t.Errorf("FromEnv(%q) = %v, %v; want off", env, tr, err)
			_ = tr.Shutdown(context.Background())
		}
	}
}

// TestFromEnvExporters: the exporters the environment names are built,
// an endpoint alone means otlp, and the console writes where it is told.
func TestFromEnvExporters(t *testing.T) {
	for _, env := range [][]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:1/v1/traces"},
		{"OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
		{"OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"},
	} {
		tr, err := oteltracing.FromEnv(context.Background(), oteltracing.EnvOptions{Getenv: envOf(env...)})
		if tr == nil || err != nil {
			t.Errorf("FromEnv(%q) = %v, %v; want a Tracer", env, tr, err)
			continue
		}
		// Nothing was traced: shutting down exports nothing.
		if err := tr.Shutdown(context.Background()); err != nil {
			t.Errorf("FromEnv(%q): Shutdown: %v", env, err)
		}
	}
	var out bytes.Buffer
	tr, err := oteltracing.FromEnv(context.Background(), oteltracing.EnvOptions{Getenv: envOf("OTEL_TRACES_EXPORTER", "console"), Console: &out})
	if err != nil {
		t.Fatal(err)
	}
	_, s := tr.StartRequest(context.Background(), oteltracing.Request{Method: "tools/call", Name: "mcp__a__b"})
	s.End("ok", nil)
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"Name":"tools/call mcp__a__b"`) {
		t.Errorf("the console exporter wrote:\n%s", out.String())
	}
}

// TestFromEnvErrors name the variable and the values it takes.
func TestFromEnvErrors(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"OTEL_TRACES_EXPORTER", "zipkin"}, `$OTEL_TRACES_EXPORTER: exporter "zipkin" is not supported: use otlp, console or none`},
		{[]string{"OTEL_TRACES_EXPORTER", "console,none"}, `none cannot be given with other exporters`},
		{[]string{"OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"}, `$OTEL_EXPORTER_OTLP_PROTOCOL=http/json is not supported: use http/protobuf or grpc`},
		{[]string{"OTEL_TRACES_EXPORTER", "console,otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "udp"}, `$OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="udp" is not an OTLP protocol: use http/protobuf or grpc`},
	} {
		tr, err := oteltracing.FromEnv(context.Background(), oteltracing.EnvOptions{Getenv: envOf(tc.env...)})
		if tr != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("FromEnv(%q) = %v, %v; want an error with %q", tc.env, tr, err, tc.want)
		}
	}
}
