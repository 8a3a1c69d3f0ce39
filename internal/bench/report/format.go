package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"shoal/internal/bench/machine"
	"shoal/internal/bench/result"
	"shoal/internal/bench/workload"
)

// value formats a figure with about four significant digits.
func value(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a >= 10:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

// ratio formats a ratio as "0.49×" (two significant digits below 0.1:
// "0.0021×"), or "–" when it is not a number.
func ratio(r result.Float) string {
	if !r.Valid() {
		return "–"
	}
	if v := float64(r); v < 0.1 && v > 0 {
		return strconv.FormatFloat(v, 'g', 2, 64) + "×"
	}
	return fmt.Sprintf("%.2f×", float64(r))
}

// spread formats a relative spread as "±4%".
func spread(s float64) string { return fmt.Sprintf("±%.0f%%", s*50) }

// cell is one target's figure: "812.3 ±4%", or the error count.
func cell(r result.TargetResult) string {
	if !r.OK() {
		if len(r.Errors) == 0 {
			return "–"
		}
		return fmt.Sprintf("ERROR %d/%d", len(r.Errors), len(r.Samples))
	}
	s := value(r.Summary.Median)
	if r.Summary.N > 1 {
		s += " " + spread(r.Summary.Spread)
	}
	if len(r.Errors) > 0 {
		s += fmt.Sprintf(" (%d failed)", len(r.Errors))
	}
	return s
}

// metricLabel is the figure name with "(cold)" when the cache was dropped.
func metricLabel(m result.Metric) string {
	if m.Cold {
		return m.Name + " (cold)"
	}
	return m.Name
}

// paramLine joins workload parameters as "name value, ...".
func paramLine(ps []workload.Param) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.Name + " " + p.Value
	}
	return strings.Join(parts, ", ")
}

// fsLine describes a target's file systems: "ext4 (/dev/vda on /)".
func fsLine(fss []machine.FS) string {
	parts := make([]string, len(fss))
	for i, f := range fss {
		typ := f.MountType
		if typ == "" {
			typ = f.StatfsType
		}
		parts[i] = fmt.Sprintf("%s (%s on %s)", typ, f.Source, f.MountPoint)
		if f.Error != "" {
			parts[i] = f.Error
		}
	}
	return strings.Join(parts, "; ")
}

// errorLines lists each distinct error of a workload once, with where it
// happened.
func errorLines(w result.Workload) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range w.Metrics {
		for _, r := range m.Results {
			for _, s := range r.Samples {
				if s.Error == "" {
					continue
				}
				line := fmt.Sprintf("%s on %s, round %d: %s", m.Name, r.Target, s.Round, s.Error)
				key := r.Target + "\x00" + s.Error
				if !seen[key] {
					seen[key] = true
					out = append(out, line)
				}
			}
		}
	}
	return out
}
