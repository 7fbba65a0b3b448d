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
