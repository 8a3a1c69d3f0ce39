package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"shoal/internal/bench/result"
)

// Table writes the summary table: per workload, one row per figure with
// each target's median and spread, and each later target's ratio to the
// first.
func Table(w io.Writer, rep *result.Report) error {
	ew := &errWriter{w: w}
	header(ew, rep)
	for _, wl := range rep.Workloads {
		fmt.Fprintf(ew, "\n%s — %s\n", wl.Name, paramLine(wl.Params))
		tw := tabwriter.NewWriter(ew, 2, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, tableHead(rep))
		for _, m := range wl.Metrics {
			fmt.Fprint(tw, tableRow(m))
		}
		tw.Flush()
		for _, e := range errorLines(wl) {
			fmt.Fprintf(ew, "  error: %s\n", e)
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(ew, "\nnote: %s\n", n)
	}
	if rep.Errors > 0 {
		fmt.Fprintf(ew, "\n%d measurement(s) failed; see the errors above.\n", rep.Errors)
	}
	return ew.err
}

func header(w io.Writer, rep *result.Report) {
	s := rep.Settings
	fmt.Fprintf(w, "shoal bench %s: %d round(s) interleaved, %d client(s) per target, page cache %s\n",
		rep.RunID, s.Rounds, s.Clients, s.CacheDrop)
	fmt.Fprintf(w, "figures: median over rounds ±half the range as %% of it; higher is better; ratios to %s\n", firstName(rep))
	for _, t := range rep.Targets {
		fmt.Fprintf(w, "  %s: %s — %s\n", t.Name, strings.Join(t.Dirs, ", "), fsLine(t.FS))
	}
}

func firstName(rep *result.Report) string {
	if len(rep.Targets) == 0 {
		return "-"
	}
	return rep.Targets[0].Name
}

func tableHead(rep *result.Report) string {
	var b strings.Builder
	b.WriteString("figure\tunit\t")
	for i, t := range rep.Targets {
		b.WriteString(t.Name + "\t")
		if i > 0 {
			b.WriteString("ratio\t")
		}
	}
	b.WriteString("\n")
	return b.String()
}

func tableRow(m result.Metric) string {
	var b strings.Builder
	b.WriteString(metricLabel(m) + "\t" + m.Unit + "\t")
	for i, r := range m.Results {
		b.WriteString(cell(r) + "\t")
		if i > 0 {
			b.WriteString(ratio(r.Ratio) + "\t")
		}
	}
	b.WriteString("\n")
	return b.String()
}

// errWriter remembers the first write error so callers can write freely.
type errWriter struct {
	w   io.Writer
	err error
}

// Write implements io.Writer; it never fails, see errWriter.
func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return len(p), nil
	}
	_, e.err = e.w.Write(p)
	return len(p), nil
}
