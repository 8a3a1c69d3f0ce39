package console

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"net/http"
	"time"
)

//go:embed page.html
var pageHTML string

//go:embed style.css
var styleCSS string

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"bytes": anyBytes,
	"mul26": func(p float64) float64 { return p * 2.6 },
	"dur":   roundDuration,
	"pct":   percent,
	"bar":   barWidth,
	"maxOps": func(ms []Mount) float64 {
		return maxOf(ms, func(m Mount) float64 { return m.Report.OpsPerSec })
	},
	"maxLat": func(ms []Mount) float64 {
		return maxOf(ms, func(m Mount) float64 { return float64(m.Report.AvgLatency) })
	},
	"rate":  func(b float64) string { return humanBytes(uint64(b)) + "/s" },
	"secs":  func(d time.Duration) string { return d.Round(100 * time.Millisecond).String() },
	"float": func(d time.Duration) float64 { return float64(d) },
	"when":  func(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") },
	"css":   func() template.CSS { return template.CSS(styleCSS) },
}).Parse(pageHTML))

// pageData is what the template renders.
type pageData struct {
	Status
	Reclaimed string // the outcome of a reclaim just made, from the query
}

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	st, ok := s.status(w, r)
	if !ok {
		return
	}
	var buf bytes.Buffer
	if err := pageTmpl.Execute(&buf, pageData{Status: st, Reclaimed: r.URL.Query().Get("reclaimed")}); err != nil {
		s.cfg.Logger.Error("console: rendering the page failed", "err", err)
		http.Error(w, "rendering failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

// anyBytes is humanBytes for the integer types the page holds.
func anyBytes(n any) string {
	switch v := n.(type) {
	case int:
		return humanBytes(uint64(max(v, 0)))
	case int64:
		return humanBytes(uint64(max(v, 0)))
	case uint64:
		return humanBytes(v)
	}
	return fmt.Sprint(n)
}

// humanBytes prints n in binary units.
func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// roundDuration prints d with a precision that suits its size.
func roundDuration(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// percent is used/limit in percent, 0 without a limit.
func percent(used, limit uint64) float64 {
	if limit == 0 {
		return 0
	}
	return min(100, 100*float64(used)/float64(limit))
}

// barWidth scales v of max to a bar of at most width pixels, at least 1
// for a non-zero value so that it shows.
func barWidth(v, max float64, width int) int {
	if max <= 0 || v <= 0 {
		return 0
	}
	return int(max1(v/max*float64(width), 1))
}

func max1(a, b float64) float64 {
	if a > b {
		return a
	}
	return b
}

// maxOf is the largest f over the mounts that have a report.
func maxOf(ms []Mount, f func(Mount) float64) float64 {
	best := 0.0
	for _, m := range ms {
		if m.Report != nil {
			best = max1(best, f(m))
		}
	}
	return best
}
