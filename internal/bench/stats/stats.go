package stats

import (
	"math"
	"sort"
)

// Summary describes a set of samples.
type Summary struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Mean   float64 `json:"mean"`
	StdDev float64 `json:"stddev"`
	// Spread is (Max-Min)/Median: 0.1 means the samples lie within 10% of
	// the median's size. 0 when there are fewer than two samples or the
	// median is 0.
	Spread float64 `json:"spread"`
}

// Summarize returns the summary of xs. It does not modify xs. An empty
// input gives the zero Summary.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := Summary{N: len(xs), Median: Median(xs), Min: math.Inf(1), Max: math.Inf(-1)}
	var sum float64
	for _, x := range xs {
		s.Min = math.Min(s.Min, x)
		s.Max = math.Max(s.Max, x)
		sum += x
	}
	s.Mean = sum / float64(len(xs))
	if len(xs) > 1 {
		var ss float64
		for _, x := range xs {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.StdDev = math.Sqrt(ss / float64(len(xs)-1))
		if s.Median != 0 {
			s.Spread = (s.Max - s.Min) / math.Abs(s.Median)
		}
	}
	return s
}

// Median returns the middle value of xs (the mean of the two middle values
// for an even count), or NaN for no values. It does not modify xs.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Ratio returns x/base, or NaN when base is 0 or either is NaN.
func Ratio(x, base float64) float64 {
	if base == 0 || math.IsNaN(base) || math.IsNaN(x) {
		return math.NaN()
	}
	return x / base
}
