package bench_test

import (
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	xs := []time.Duration{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0, 1}, {0.5, 5}, {0.9, 9}, {0.99, 10}, {1, 10}} {
		if got := quantile(xs, c.q); got != c.want {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if xs[0] != 5 {
		t.Error("quantile changed its input")
	}
	if got := quantile(nil, 0.5); got != 0 {
		t.Errorf("quantile(nil) = %v, want 0", got)
	}
}

// TestFleet runs the scale harness small: supervisors come up, all recover
// from a crash of every server session, and closing leaves nothing behind
// (TestMain's goleak checks the goroutines).
func TestFleet(t *testing.T) {
	p := scalePolicy
	p.Jitter = 0.5
	f := startFleet(t, 5, p)
	defer f.close(t)
	for i, d := range f.crashAndRecover(t) {
		if d <= 0 {
			t.Errorf("supervisor %d: recovery time %v", i, d)
		}
	}
	for i, d := range bareRecover(t, 5) {
		if d <= 0 {
			t.Errorf("floor session %d: recovery time %v", i, d)
		}
	}
}
