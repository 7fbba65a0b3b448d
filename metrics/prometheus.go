package metrics

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
)

// Prometheus returns a MeterProvider and an http.Handler that serves every
// metric recorded through it in the Prometheus text exposition format
// (or OpenMetrics, when the scraper asks for it), together with the Go
// runtime's and the process's standard metrics. Pass the provider to
// [New] and mount the handler at /metrics. Each call has a registry of its
// own, so two hosts in one process (or two tests) do not collide. Shut the
// provider down when the host stops.
func Prometheus() (*sdkmetric.MeterProvider, http.Handler, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, nil, fmt.Errorf("metrics.Prometheus: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, nil, fmt.Errorf("metrics.Prometheus: %w", err)
	}
	exp, err := otelprom.New(
		otelprom.WithRegisterer(reg),
		// Stated rather than left to the default, which depends on a
		// package variable of prometheus/common.
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
		otelprom.WithoutScopeInfo(),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics.Prometheus: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp),
		// Records carry no span (calls are recorded after they end), so
		// the default trace-based filter would never keep an exemplar:
		// skip asking it on every record.
		sdkmetric.WithExemplarFilter(exemplar.AlwaysOffFilter))
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
	return mp, h, nil
}
