package metrics_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/metrics"
)

// mcpfsm.server.instances reports what CountInstances's source counts,
// per server, at each collection; without a source, nothing.
func TestInstancesGauge(t *testing.T) {
	s := newSDK(t)
	m, err := metrics.New(s.mp)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got, _ := s.collect(t); got["mcpfsm.server.instances"] != nil {
		t.Fatalf("instances without a source: %v", got["mcpfsm.server.instances"])
	}
	counts := map[string]int{"fs": 3, "gh": 1}
	m.CountInstances(func() map[string]int { return counts })
	got, _ := s.collect(t)
	want := map[string]float64{"mcpfsm.server.name=fs": 3, "mcpfsm.server.name=gh": 1}
	if d := cmp.Diff(want, got["mcpfsm.server.instances"]); d != "" {
		t.Errorf("instances (-want +got):\n%s", d)
	}
}
