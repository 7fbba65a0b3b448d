package policy_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/policy"
)

func TestJitteredDelay(t *testing.T) {
	withJitter := func(j float64) policy.Policy { p := policy.Default(); p.Jitter = j; return p }
	tests := []struct {
		name    string
		p       policy.Policy
		attempt int
		r       float64
		want    time.Duration
	}{
		{"no jitter ignores r", withJitter(0), 1, 0.99, 500 * time.Millisecond},
		{"r=0 is the low end", withJitter(0.2), 1, 0, 400 * time.Millisecond},
		{"r=0.5 is the schedule", withJitter(0.2), 2, 0.5, time.Second},
		{"r=0.75 is halfway up", withJitter(0.2), 2, 0.75, 1100 * time.Millisecond},
		{"capped delay is jittered too", withJitter(0.5), 10, 0, 15 * time.Second},
		{"full jitter at r=0 is zero", withJitter(1), 3, 0, 0},
		{"r below 0 is clamped", withJitter(0.2), 1, -3, 400 * time.Millisecond},
		{"NaN r means no shift", withJitter(0.2), 1, math.NaN(), 500 * time.Millisecond},
		{"NaN jitter means none", withJitter(math.NaN()), 1, 0, 500 * time.Millisecond},
		{"jitter above 1 is clamped", withJitter(5), 1, 0, 0},
		{"invalid policy never negative", policy.Policy{InitialDelay: -time.Second, MaxDelay: time.Second, Jitter: 1}, 1, 0, 0},
		{"invalid huge policy saturates", policy.Policy{InitialDelay: math.MaxInt64, MaxDelay: math.MaxInt64, Jitter: 1}, 1, 0.99, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.JitteredDelay(tt.attempt, tt.r); got != tt.want {
				t.Errorf("JitteredDelay(%d, %v) = %v, want %v", tt.attempt, tt.r, got, tt.want)
			}
		})
	}
}

// TestJitteredDelayUpperEnd checks the top of the interval: r at or above 1
// yields at most Delay*(1+j).
func TestJitteredDelayUpperEnd(t *testing.T) {
	p := policy.Default()
	p.Jitter = 0.2
	for _, r := range []float64{math.Nextafter(1, 0), 1, 7, math.Inf(1)} {
		if got := p.JitteredDelay(1, r); got != 600*time.Millisecond {
			t.Errorf("JitteredDelay(1, %v) = %v, want 600ms", r, got)
		}
	}
}

// TestJitterBoundsManyDraws samples the Budget's whole schedule many times
// from a seeded source and checks every delay against the documented
// interval and the overall bounds [0, MaxDelay*(1+Jitter)].
func TestJitterBoundsManyDraws(t *testing.T) {
	src := rand.New(rand.NewPCG(7, 11))
	for _, j := range []float64{0.01, 0.2, 0.5, 1} {
		p := policy.Default()
		p.Jitter = j
		ceiling := time.Duration(float64(p.MaxDelay) * (1 + j))
		var below, above int // draws on each side of the schedule
		for range 2000 {
			for n := 1; n <= p.MaxAttempts; n++ {
				d := p.JitteredDelay(n, src.Float64())
				base := float64(p.Delay(n))
				if d < 0 || d > ceiling || float64(d) < math.Floor(base*(1-j)) || float64(d) > base*(1+j) {
					t.Fatalf("jitter %v attempt %d: delay %v outside [%v, %v]", j, n, d,
						time.Duration(base*(1-j)), time.Duration(base*(1+j)))
				}
				switch {
				case float64(d) < base:
					below++
				case float64(d) > base:
					above++
				}
			}
		}
		// Symmetric jitter: about half the draws fall on each side.
		if total := below + above; below < total*45/100 || above < total*45/100 {
			t.Errorf("jitter %v: %d draws below the schedule, %d above; want roughly even", j, below, above)
		}
	}
}
