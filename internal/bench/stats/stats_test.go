package stats

import (
	"math"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{5, 5, 1, 100, 5}, 5},
	} {
		in := append([]float64(nil), tc.in...)
		if got := Median(in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.in[i] {
				t.Fatalf("Median modified its input: %v", in)
			}
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("Median(nil) is not NaN")
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{90, 100, 110})
	if s.N != 3 || s.Median != 100 || s.Min != 90 || s.Max != 110 || s.Mean != 100 {
		t.Fatalf("summary %+v", s)
	}
	if math.Abs(s.Spread-0.2) > 1e-12 {
		t.Errorf("spread %v, want 0.2", s.Spread)
	}
	if math.Abs(s.StdDev-10) > 1e-12 {
		t.Errorf("stddev %v, want 10", s.StdDev)
	}
	if one := Summarize([]float64{7}); one.Spread != 0 || one.StdDev != 0 || one.Median != 7 {
		t.Errorf("one sample: %+v", one)
	}
	if z := Summarize(nil); z.N != 0 {
		t.Errorf("empty: %+v", z)
	}
}

func TestRatio(t *testing.T) {
	if r := Ratio(50, 100); r != 0.5 {
		t.Errorf("Ratio(50,100) = %v", r)
	}
	for _, base := range []float64{0, math.NaN()} {
		if !math.IsNaN(Ratio(1, base)) {
			t.Errorf("Ratio(1,%v) is not NaN", base)
		}
	}
}
