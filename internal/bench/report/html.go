package report

import (
	"fmt"
	"html/template"
	"io"
	"strings"

	"shoal/internal/bench/result"
	"shoal/internal/bench/workload"
)

// HTML writes a self-contained report page: settings, machine facts,
// targets, then per workload its parameters, its chart and its table of
// figures with ratios to the first target, then notes. The page loads
// nothing from anywhere.
func HTML(w io.Writer, rep *result.Report) error {
	return page.Execute(w, newView(rep))
}

// view is what the template shows.
type view struct {
	R         *result.Report
	Title     string
	Mem       string
	First     string
	Names     []string
	Colors    []template.CSS
	Workloads []workloadView
}

type workloadView struct {
	W      result.Workload
	Params string
	Chart  template.HTML // built by Chart from escaped parts
	Errors []string
}

func newView(rep *result.Report) view {
	v := view{R: rep, First: firstName(rep), Mem: workload.Size(rep.Machine.MemBytes)}
	for i, t := range rep.Targets {
		v.Names = append(v.Names, t.Name)
		v.Colors = append(v.Colors, template.CSS(color(i)))
	}
	v.Title = "shoal bench: " + strings.Join(v.Names, " vs ")
	for _, wl := range rep.Workloads {
		v.Workloads = append(v.Workloads, workloadView{
			W: wl, Params: paramLine(wl.Params),
			Chart:  template.HTML(Chart(wl, v.Names)), // #nosec: Chart escapes every text it embeds
			Errors: errorLines(wl),
		})
	}
	return v
}

var funcs = template.FuncMap{
	"cell":   cell,
	"ratio":  ratio,
	"label":  metricLabel,
	"fsline": fsLine,
	"size":   workload.Size,
	"color":  func(i int) template.CSS { return template.CSS(color(i)) },
	"join":   strings.Join,
	"ratioClass": func(r result.Float) string {
		switch {
		case !r.Valid():
			return ""
		case r >= 1.05:
			return "up"
		case r <= 0.95:
			return "down"
		}
		return ""
	},
	"gt0": func(i int) bool { return i > 0 },
	"str": func(v any) string { return fmt.Sprint(v) },
}

var page = template.Must(template.New("page").Funcs(funcs).Parse(pageText))

const pageText = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1000px;color:#222;padding:0 12px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:28px 0 4px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0} td,th{padding:3px 10px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums} .muted{color:#666} .up{color:#1a7f37;font-weight:600} .down{color:#b42318;font-weight:600}
.sw{display:inline-block;width:11px;height:11px;margin-right:5px;vertical-align:-1px}
svg.chart{display:block;margin:8px 0} svg text{font:12px system-ui,sans-serif;fill:#222}
svg .err{fill:#b42318} svg .rng{stroke:#222;stroke-width:1.2}
.note{background:#fff7e0;border-left:4px solid #e0a800;padding:6px 10px;margin:6px 0}
.errl{color:#b42318} td:first-child{white-space:nowrap}
</style></head><body>
<h1>{{.Title}}</h1>
<p class="muted">Run {{.R.RunID}} · {{.R.Started.Format "2006-01-02 15:04:05 UTC"}} to {{.R.Finished.Format "15:04:05"}} ·
{{.R.Settings.Rounds}} round(s), targets interleaved · {{.R.Settings.Clients}} client(s) per target · page cache before cold phases: {{.R.Settings.CacheDrop}}.
Each figure is the median over the rounds (higher is better); the thin line spans the lowest to the highest round; ratios are to <b>{{.First}}</b>.</p>
{{range .R.Notes}}<div class="note">{{.}}</div>{{end}}
<h2>Targets</h2>
<table><tr><th>target</th><th>directories</th><th>file system</th></tr>
{{range $i, $t := .R.Targets}}<tr><td><span class="sw" style="background:{{color $i}}"></span>{{$t.Name}}</td><td>{{join $t.Dirs ", "}}</td><td>{{fsline $t.FS}}</td></tr>{{end}}
</table>
<h2>Machine</h2>
<table>
<tr><td>CPU</td><td>{{.R.Machine.CPUModel}}</td></tr>
<tr><td>cores</td><td>{{.R.Machine.Cores}}</td></tr>
<tr><td>memory</td><td>{{.Mem}}</td></tr>
<tr><td>kernel</td><td>{{.R.Machine.Kernel}} ({{.R.Machine.Arch}})</td></tr>
<tr><td>host</td><td>{{.R.Machine.Hostname}}</td></tr>
<tr><td>command</td><td><code>{{.R.Settings.Command}}</code></td></tr>
</table>
{{range .Workloads}}
<h2>{{.W.Name}}</h2>
<p class="muted">{{.Params}}</p>
{{.Chart}}
<table><tr><th>figure</th><th>unit</th>{{range $i, $n := $.Names}}<th>{{$n}}</th>{{if gt0 $i}}<th>ratio</th>{{end}}{{end}}</tr>
{{range .W.Metrics}}<tr><td>{{label .}}</td><td>{{.Unit}}</td>{{range $i, $r := .Results}}<td class="n">{{cell $r}}</td>{{if gt0 $i}}<td class="n {{ratioClass $r.Ratio}}">{{ratio $r.Ratio}}</td>{{end}}{{end}}</tr>
{{end}}</table>
{{range .Errors}}<div class="errl">error: {{.}}</div>{{end}}
{{end}}
<p class="muted">Written by shoal bench, schema {{.R.Schema}}. {{.R.Errors}} failed measurement(s).</p>
</body></html>
`
