package metrics

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"go.opentelemetry.io/otel/metric"
)

// ScopeName is the instrumentation scope of the instruments: the name the
// Meter is obtained under.
const ScopeName = "github.com/mcpfsm/mcpfsm/metrics"

// Attribute keys of mcpfsm's own instruments (see the package doc).
const (
	KeyServer          = "mcpfsm.server.name"
	KeyState           = "mcpfsm.state"
	KeyTransitionFrom  = "mcpfsm.transition.from"
	KeyTransitionTo    = "mcpfsm.transition.to"
	KeyTransitionEvent = "mcpfsm.transition.event"
	KeyOutageEnd       = "mcpfsm.outage.end"
	KeyCallOutcome     = "mcpfsm.call.outcome"
	KeyRefusalReason   = "mcpfsm.refusal.reason"
)

// Bucket boundaries, in seconds, advised to the SDK (a View can replace
// them). Tool calls span milliseconds to CallTimeout (5 minutes by
// default); outages span one backoff delay to hours of a server left
// exhausted.
var (
	callBuckets   = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	outageBuckets = []float64{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
)

// Metrics holds the instruments that measure supervisors. One Metrics
// serves any number of supervisors; its methods are safe for concurrent
// use. Call [Metrics.Close] to stop reporting.
type Metrics struct {
	transitions metric.Int64Counter
	reconnects  metric.Int64Counter
	outages     metric.Float64Histogram
	calls       metric.Float64Histogram
	pending     *pending // calls not yet recorded into calls
	state       metric.Int64ObservableGauge
	tools       metric.Int64ObservableGauge
	instances   metric.Int64ObservableGauge
	countInst   atomic.Pointer[func() map[string]int]
	reg         metric.Registration
	refusals    refusals
	cuts        metric.Int64Counter // results.go
	cutBytes    metric.Int64Counter

	callsMu sync.RWMutex
	servers map[string]*serverCalls // call recorders, by server name
	cached  atomic.Int64            // attribute sets cached by all of them

	mu      sync.Mutex
	tracked map[*conn.Supervisor]*tracked
}

// New creates the instruments on a Meter of mp named [ScopeName].
func New(mp metric.MeterProvider) (*Metrics, error) {
	if mp == nil {
		return nil, errors.New("metrics.New: nil MeterProvider: pass otel.GetMeterProvider(), an SDK MeterProvider, or the one metrics.Prometheus returns")
	}
	meter := mp.Meter(ScopeName)
	m := &Metrics{tracked: map[*conn.Supervisor]*tracked{}}
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	var err error
	m.transitions, err = meter.Int64Counter("mcpfsm.connection.transitions",
		metric.WithUnit("{transition}"),
		metric.WithDescription("Transitions of the connection state machine, by from, to and event."))
	add(err)
	m.reconnects, err = meter.Int64Counter("mcpfsm.connection.reconnect.attempts",
		metric.WithUnit("{attempt}"),
		metric.WithDescription("Reconnect attempts started: each backoff delay that elapsed."))
	add(err)
	m.outages, err = meter.Float64Histogram("mcpfsm.connection.outage.duration",
		metric.WithUnit("s"),
		metric.WithDescription("How long a server was unavailable, from losing its connection (or failing to make the first one) until it was established again or closed."),
		metric.WithExplicitBucketBoundaries(outageBuckets...))
	add(err)
	m.calls, err = meter.Float64Histogram("mcp.client.operation.duration",
		metric.WithUnit("s"),
		metric.WithDescription("The duration of the MCP request or notification as observed on the sender from the time it was sent until the response or ack is received."),
		metric.WithExplicitBucketBoundaries(callBuckets...))
	add(err)
	m.refusals.counter, err = meter.Int64Counter("mcpfsm.caller.refusals",
		metric.WithUnit("{refusal}"),
		metric.WithDescription("Requests of a caller refused by a server's per-caller policy, by server and reason."))
	add(err)
	m.cuts, err = meter.Int64Counter("mcpfsm.tool.result.cuts",
		metric.WithUnit("{result}"),
		metric.WithDescription("Tool results cut to their server's maxResultBytes, by server."))
	add(err)
	m.cutBytes, err = meter.Int64Counter("mcpfsm.tool.result.cut_bytes",
		metric.WithUnit("By"),
		metric.WithDescription("Bytes cut of tool results past their server's maxResultBytes, by server."))
	add(err)
	m.state, err = meter.Int64ObservableGauge("mcpfsm.connection.state",
		metric.WithUnit("{state}"),
		metric.WithDescription("The state of each supervised server's connection: 1 for the current state, 0 for the others."))
	add(err)
	m.tools, err = meter.Int64ObservableGauge("mcpfsm.connection.tools",
		metric.WithUnit("{tool}"),
		metric.WithDescription("The tools each supervised server has registered."))
	add(err)
	m.instances, err = meter.Int64ObservableGauge("mcpfsm.server.instances",
		metric.WithUnit("{instance}"),
		metric.WithDescription("The instances each server runs beside its shared one (per-client, or a shared server's 2026-07-28 one; see CountInstances)."))
	add(err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("metrics.New: creating instruments: %w", err)
	}
	m.pending = newPending(m)
	m.reg, err = meter.RegisterCallback(m.observe, m.state, m.tools, m.instances)
	if err != nil {
		return nil, fmt.Errorf("metrics.New: registering the state callback: %w", err)
	}
	return m, nil
}

// Close records the tool calls still queued, stops reporting the
// observable instruments (state and tools) and forgets every tracked
// supervisor. Counters and histograms already recorded stay with the
// MeterProvider; a call that ends after Close is recorded at once.
func (m *Metrics) Close() error {
	m.pending.flush(true)
	m.mu.Lock()
	clear(m.tracked)
	m.mu.Unlock()
	return m.reg.Unregister()
}

// Start starts a supervisor measured by m: it is conn.Start with
// cfg passed through [Metrics.Instrument], followed by [Metrics.Track].
func (m *Metrics) Start(ctx context.Context, cfg conn.Config) (*conn.Supervisor, error) {
	sup, err := conn.Start(ctx, m.Instrument(cfg))
	if err != nil {
		return nil, err
	}
	m.Track(sup)
	return sup, nil
}

// Instrument returns cfg with its OnTransition and OnCall hooks extended to
// record into m; hooks cfg already has are called too, after m's. Use the
// result for exactly one conn.Start: the transition hook remembers when
// the supervisor's current outage began.
func (m *Metrics) Instrument(cfg conn.Config) conn.Config {
	observe := m.TransitionObserver()
	if next := cfg.OnTransition; next != nil {
		cfg.OnTransition = func(t conn.Transition) { observe(t); next(t) }
	} else {
		cfg.OnTransition = observe
	}
	calls := m.callsOf(cfg.Name)
	if next := cfg.OnCall; next != nil {
		cfg.OnCall = func(r conn.CallRecord) { calls.record(r); next(r) }
	} else {
		cfg.OnCall = calls.record
	}
	return cfg
}

// TransitionObserver returns a function for the conn.Config.OnTransition
// of one supervisor that records its transitions, reconnect attempts and
// outages. Each supervisor needs its own: the function remembers when the
// current outage began. Like OnTransition it must be called in order, from
// one goroutine at a time.
func (m *Metrics) TransitionObserver() func(conn.Transition) {
	var outage time.Time // when the current outage began; zero when none
	return func(t conn.Transition) {
		ctx := context.Background()
		m.transitions.Add(ctx, 1, metric.WithAttributes(
			serverAttr(t.Server),
			attrString(KeyTransitionFrom, string(t.From)),
			attrString(KeyTransitionTo, string(t.To)),
			attrString(KeyTransitionEvent, string(t.Event))))
		// Every attempt after the first: a backoff ended, an operator
		// called Reconnect, or an exhausted supervisor probed.
		if t.To == conn.Connecting {
			m.reconnects.Add(ctx, 1, metric.WithAttributes(serverAttr(t.Server)))
		}
		switch {
		case t.To == conn.Established:
			if !outage.IsZero() {
				m.outages.Record(ctx, t.At.Sub(outage).Seconds(), metric.WithAttributes(
					serverAttr(t.Server), attrString(KeyOutageEnd, "recovered")))
				outage = time.Time{}
			}
		case t.To == conn.Disposing:
			if !outage.IsZero() {
				m.outages.Record(ctx, t.At.Sub(outage).Seconds(), metric.WithAttributes(
					serverAttr(t.Server), attrString(KeyOutageEnd, "closed")))
				outage = time.Time{}
			}
		case t.From == conn.Established, t.From == conn.Connecting && outage.IsZero():
			// An established connection was lost, or an attempt failed
			// while the server was not yet in an outage (its first one).
			outage = t.At
		}
	}
}
