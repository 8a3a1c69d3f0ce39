package report

import (
	"fmt"
	"html"
	"math"
	"strings"

	"shoal/internal/bench/result"
)

// Palette holds the target colours, in target order (repeating). Tests
// look for these colours in a screenshot of the page.
var Palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

// Chart geometry, in SVG user units (pixels at 100% zoom).
const (
	labelWidth = 210 // figure names
	barArea    = 430 // longest bar
	textWidth  = 170 // value and ratio after the bar
	barHeight  = 14
	barGap     = 2
	rowGap     = 12
	legendH    = 26
)

// Chart draws one workload as horizontal grouped bars: one group per
// figure, one bar per target. Each group is scaled to its own largest
// median (figures have different units); a thin line over each bar spans
// the samples' min..max. A failed figure is written in red instead.
func Chart(w result.Workload, targets []string) string {
	width := labelWidth + barArea + textWidth
	groupH := len(targets)*(barHeight+barGap) + rowGap
	height := legendH + len(w.Metrics)*groupH + 8
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		width, height, width, height, html.EscapeString(w.Name))
	legend(&b, targets)
	for i, m := range w.Metrics {
		group(&b, m, legendH+i*groupH)
	}
	b.WriteString("</svg>")
	return b.String()
}

func legend(b *strings.Builder, targets []string) {
	x := labelWidth
	for i, t := range targets {
		fmt.Fprintf(b, `<rect x="%d" y="6" width="12" height="12" fill="%s"/>`, x, color(i))
		fmt.Fprintf(b, `<text x="%d" y="16" class="lg">%s</text>`, x+16, html.EscapeString(t))
		x += 28 + 7*len(t)
	}
}

// group draws the bars of one figure starting at y.
func group(b *strings.Builder, m result.Metric, y int) {
	top := 0.0
	for _, r := range m.Results {
		if r.OK() {
			top = math.Max(top, r.Summary.Max)
		}
	}
	label := metricLabel(m) + " (" + m.Unit + ")"
	fmt.Fprintf(b, `<text x="%d" y="%d" class="fig" text-anchor="end">%s</text>`,
		labelWidth-8, y+barHeight-2, html.EscapeString(label))
	for i, r := range m.Results {
		by := y + i*(barHeight+barGap)
		if !r.OK() {
			fmt.Fprintf(b, `<text x="%d" y="%d" class="err">failed: %s</text>`, labelWidth+4, by+barHeight-3,
				html.EscapeString(firstError(r)))
			continue
		}
		bar(b, r, i, by, top)
	}
}

// bar draws one target's bar, its min..max line and its value text.
func bar(b *strings.Builder, r result.TargetResult, i, y int, top float64) {
	scale := func(v float64) float64 {
		if top <= 0 {
			return 0
		}
		return v / top * barArea
	}
	w := math.Max(scale(r.Summary.Median), 1)
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>`,
		labelWidth, y, w, barHeight, color(i), html.EscapeString(r.Target+": "+cell(r)))
	if r.Summary.N > 1 {
		lo, hi := labelWidth+scale(r.Summary.Min), labelWidth+scale(r.Summary.Max)
		mid := float64(y) + barHeight/2.0
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="rng"/>`, lo, mid, hi, mid)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" class="rng"/>`, lo, y+3, lo, y+barHeight-3)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" class="rng"/>`, hi, y+3, hi, y+barHeight-3)
	}
	text := value(r.Summary.Median)
	if i > 0 {
		text += "  " + ratio(r.Ratio)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%d" class="val">%s</text>`,
		labelWidth+math.Max(w, scale(r.Summary.Max))+6, y+barHeight-3, html.EscapeString(text))
}

func color(i int) string { return Palette[i%len(Palette)] }

func firstError(r result.TargetResult) string {
	if len(r.Errors) == 0 {
		return "no sample"
	}
	e := r.Errors[0]
	if len(e) > 90 {
		e = e[:90] + "…"
	}
	return e
}
