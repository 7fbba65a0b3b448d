// Package stats holds the small statistics mcpfsm's benchmarks share.
package stats

import (
	"math"
	"slices"
	"testing"
)

// MedianCI returns the median of xs and the bounds of a 95 % confidence
// interval for it: the order statistics n/2 ± 0.98·√n, which hold for any
// distribution. It sorts xs. For no xs it returns zeros.
func MedianCI(xs []float64) (lo, med, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	slices.Sort(xs)
	n := len(xs)
	d := int(math.Ceil(0.98 * math.Sqrt(float64(n))))
	return xs[max(0, n/2-d)], xs[n/2], xs[min(n-1, n/2+d)]
}

// ReportMedianCI reports the median of xs as metric name, and the bounds of
// its 95 % interval (see MedianCI) as name-lo and name-hi. It sorts xs.
func ReportMedianCI(b *testing.B, name string, xs []float64) {
	lo, med, hi := MedianCI(xs)
	b.ReportMetric(med, name)
	b.ReportMetric(lo, name+"-lo")
	b.ReportMetric(hi, name+"-hi")
}
