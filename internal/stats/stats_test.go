package stats

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMedianCI(t *testing.T) {
	tests := []struct {
		name        string
		xs          []float64
		lo, med, hi float64
	}{
		{"none", nil, 0, 0, 0},
		{"one", []float64{7}, 7, 7, 7},
		// n = 100: d = ceil(0.98*10) = 10, so ranks 40 and 60 around 50.
		{"hundred reversed", func() []float64 {
			xs := make([]float64, 100)
			for i := range xs {
				xs[i] = float64(100 - i)
			}
			return xs
		}(), 41, 51, 61},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, med, hi := MedianCI(tt.xs)
			if lo != tt.lo || med != tt.med || hi != tt.hi {
				t.Errorf("MedianCI = %v, %v, %v; want %v, %v, %v", lo, med, hi, tt.lo, tt.med, tt.hi)
			}
		})
	}
}

func TestReportMedianCI(t *testing.T) {
	xs := make([]float64, 100)
	for i := range xs {
		xs[i] = float64(100 - i)
	}
	r := testing.Benchmark(func(b *testing.B) { ReportMedianCI(b, "x", xs) })
	if got := [3]float64{r.Extra["x-lo"], r.Extra["x"], r.Extra["x-hi"]}; got != [3]float64{41, 51, 61} {
		t.Errorf("reported lo, median, hi = %v, want [41 51 61]", got)
	}
}
