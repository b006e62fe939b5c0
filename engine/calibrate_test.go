package engine

import (
	"math"
	"testing"
)

func TestCalibrated(t *testing.T) {
	tests := []struct {
		share, evidence float64
		want            float64
	}{
		{1, 1, 0.88},         // (1 + 0.15) / 1.3 = 0.885
		{1, 0.5, 0.81},       // one lexicon entry: (0.5 + 0.15) / 0.8 = 0.8125
		{1, 4, 0.97},         // (4 + 0.15) / 4.3 = 0.965
		{1, 49.5, 1.0},       // 49.65 / 49.8 = 0.997
		{1, 24, 0.99},        // 24.15 / 24.3 = 0.9938
		{0.9, 10, 0.89},      // (9 + 0.15) / 10.3 = 0.888
		{0.98, 1e6, 0.98},    // a large register keeps its share
		{0.6, 2, 0.59},       // (1.2 + 0.15) / 2.3 = 0.587
		{1, 0, 0.5},          // no evidence: the prior
		{1, -3, 0.5},         // corrupt evidence is no evidence
		{1, math.NaN(), 0.5}, // likewise
	}
	for _, tt := range tests {
		if got := calibrated(tt.share, tt.evidence); got != tt.want {
			t.Errorf("calibrated(%v, %v) = %v, want %v", tt.share, tt.evidence, got, tt.want)
		}
	}
	// Calibration never moves an answer across 0.5, nor above its share.
	for _, share := range []float64{0.51, 0.7, 0.93, 1} {
		for _, ev := range []float64{0.5, 1, 3, 30, 3000} {
			p := calibrated(share, ev)
			if p < 0.5 || p > math.Round(share*100)/100 {
				t.Errorf("calibrated(%v, %v) = %v, outside [0.5, share]", share, ev, p)
			}
		}
	}
}
