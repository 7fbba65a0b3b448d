package policy

import (
	"math"
	"time"
)

// JitteredDelay returns [Policy.Delay] for attempt, spread by the policy's
// Jitter fraction j using the random number r from [0, 1):
//
//	d = Delay(attempt) * (1 + j*(2r - 1))
//
// so d lies in [Delay*(1-j), Delay*(1+j)], uniformly for uniform r. This is
// the symmetric scheme gRPC uses (20% there). It is chosen over "full
// jitter" (uniform in [0, Delay)) because it keeps the documented schedule
// as the mean: the default budget still lasts about 151.5 s on average, and
// (for Jitter below 1) no retry comes sooner than (1-Jitter) of its delay,
// whereas full jitter may retry a crashing server almost at once. The spread
// is still enough to de-synchronise clients that lost the same server at
// the same moment.
//
// The result is never negative and never above MaxDelay*(1+Jitter). With
// Jitter 0 it equals Delay(attempt) exactly. JitteredDelay is pure: r is
// supplied by the caller (a [Budget] draws it from its random source). An r
// outside [0, 1] is clamped into it and NaN counts as 0.5 (no shift); a
// Jitter above 1 counts as 1, and a negative or NaN one as 0.
func (p Policy) JitteredDelay(attempt int, r float64) time.Duration {
	d := p.Delay(attempt)
	j := p.Jitter
	switch {
	case !(j > 0): // includes NaN
		return d
	case j > 1:
		j = 1
	}
	switch {
	case math.IsNaN(r):
		r = 0.5
	case r < 0:
		r = 0
	case r > 1:
		r = 1
	}
	// Valid delays are at most DelayLimit (~2^51 ns), so float64 holds
	// them exactly; truncation toward zero keeps the result inside the
	// interval. The guard only matters for invalid policies,
	// where converting an out-of-range float would be undefined.
	f := float64(d) * (1 + j*(2*r-1))
	if f >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(max(f, 0))
}
