package metrics

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Reasons of a refusal, the values of KeyRefusalReason.
const (
	// RefusalRateLimit: the caller reached the server's rateLimit.
	RefusalRateLimit = "rate-limit"
	// RefusalScope: the caller lacks a scope the server's allowScopes or
	// toolScopes ask for.
	RefusalScope = "scope"
)

// refusals is the counter of refused requests, with its attribute sets by
// server and reason.
type refusals struct {
	counter metric.Int64Counter

	mu   sync.Mutex
	sets map[[2]string][]metric.AddOption
}

// Refused counts one request to server refused by its per-caller policy
// for reason (RefusalRateLimit or RefusalScope), into
// mcpfsm.caller.refusals. Neither the caller nor the tool is an
// attribute: callers are unbounded, and the audit trail names them. A nil
// Metrics counts nothing.
func (m *Metrics) Refused(server, reason string) {
	if m == nil {
		return
	}
	r := &m.refusals
	k := [2]string{server, reason}
	r.mu.Lock()
	opts, ok := r.sets[k]
	if !ok && len(r.sets) < maxCachedSets {
		opts = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(serverAttr(server), attrString(KeyRefusalReason, reason)))}
		if r.sets == nil {
			r.sets = map[[2]string][]metric.AddOption{}
		}
		r.sets[k] = opts
	}
	r.mu.Unlock()
	if opts == nil {
		opts = []metric.AddOption{metric.WithAttributes(serverAttr(server), attrString(KeyRefusalReason, reason))}
	}
	r.counter.Add(context.Background(), 1, opts...)
}
