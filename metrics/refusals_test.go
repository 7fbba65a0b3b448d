package metrics_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/metrics"
)

// TestRefused: refusals are counted by server and reason, and a nil
// Metrics counts nothing without failing.
func TestRefused(t *testing.T) {
	s, m := newMetrics(t)
	for range 3 {
		m.Refused("gh", metrics.RefusalRateLimit)
	}
	m.Refused("gh", metrics.RefusalScope)
	m.Refused("fs", metrics.RefusalRateLimit)
	v, _ := s.collect(t)
	want := map[string]float64{
		"mcpfsm.refusal.reason=rate-limit,mcpfsm.server.name=gh": 3,
		"mcpfsm.refusal.reason=scope,mcpfsm.server.name=gh":      1,
		"mcpfsm.refusal.reason=rate-limit,mcpfsm.server.name=fs": 1,
	}
	if diff := cmp.Diff(want, v["mcpfsm.caller.refusals"]); diff != "" {
		t.Errorf("mcpfsm.caller.refusals (-want +got):\n%s", diff)
	}
	var none *metrics.Metrics
	none.Refused("gh", metrics.RefusalScope)
}
