package workload

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Size formats a byte count the way the report and flags spell it:
// 4KiB, 100MiB, 1.5GiB, 512B.
func Size(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if v == math.Trunc(v) {
		return fmt.Sprintf("%d%s", int64(v), units[u])
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + units[u]
}

// ParseSize reads a byte count: a number with an optional binary suffix
// k/K/KiB/KB (1024), m/M/MiB/MB, g/G/GiB/GB, t/T/TiB/TB, or b/B. Decimal
// fractions are allowed ("1.5g").
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	lower := strings.ToLower(t)
	for _, suf := range []struct {
		s string
		m int64
	}{
		{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
		{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"tb", 1 << 40},
		{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}, {"b", 1},
	} {
		if strings.HasSuffix(lower, suf.s) {
			t, mult = t[:len(t)-len(suf.s)], suf.m
			break
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("bad size %q (want e.g. 4k, 100MiB, 1g)", s)
	}
	return int64(v * float64(mult)), nil
}

// ParseRange reads "LOW-HIGH" (two sizes) or a single size (LOW = HIGH).
func ParseRange(s string) (lo, hi int64, err error) {
	a, b, found := strings.Cut(s, "-")
	if lo, err = ParseSize(a); err != nil {
		return 0, 0, err
	}
	hi = lo
	if found {
		if hi, err = ParseSize(b); err != nil {
			return 0, 0, err
		}
	}
	if hi < lo {
		return 0, 0, fmt.Errorf("bad range %q: high below low", s)
	}
	return lo, hi, nil
}
