package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"shoal/internal/bench/result"
)

// peers prints bench/peers.sh's tables from the files it leaves in dir:
//
//	targets.tsv  NAME<TAB>LABEL<TAB>STATUS, one line per column in order;
//	             STATUS is "ok" or why the column was skipped
//	one.json     shoal bench over every target, one mount each
//	par.json     hugedir with 4 clients on one mount (4 parallel creators)
//	four.json    the same workloads as one.json, 4 clients on 4 mounts
//	fsync.txt    "NAME fsync_p50_ms V" and "NAME fsync_p99_ms V" per round
//
// A missing file leaves its table out. Every figure is a median over
// rounds; the fsync figures are medians of the rounds' percentiles.
func peers(dir string) error {
	ts, err := loadTargets(filepath.Join(dir, "targets.tsv"))
	if err != nil {
		return err
	}
	one, err := loadReport(filepath.Join(dir, "one.json"))
	if err != nil {
		return err
	}
	par, err := loadReport(filepath.Join(dir, "par.json"))
	if err != nil {
		return err
	}
	four, err := loadReport(filepath.Join(dir, "four.json"))
	if err != nil {
		return err
	}
	printSeedTable(ts, one, par)
	printRatios(ts, one, par)
	printFourTable(ts, one, four)
	if res, err := load(filepath.Join(dir, "fsync.txt")); err == nil {
		printFsync(ts, res)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	printSkipped(ts)
	return nil
}

// peerTarget is one column of the tables.
type peerTarget struct {
	name, label, status string
}

func (t peerTarget) ok() bool { return t.status == "ok" }

// isPeer reports whether the column is another file system (not the
// local disk, not Shoal).
func (t peerTarget) isPeer() bool {
	return t.name != "local" && !strings.HasPrefix(t.name, "shoal")
}

func loadTargets(path string) ([]peerTarget, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ts []peerTarget
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) == 3 {
			ts = append(ts, peerTarget{f[0], f[1], f[2]})
		}
	}
	return ts, nil
}

// loadReport reads a shoal bench JSON report; a missing file is nil.
func loadReport(path string) (*result.Report, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r result.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// seedFigure is one row of the seed-test table: a figure of a workload of
// shoal bench, times scale (iozone's MiB/s shown as KiB/s).
type seedFigure struct {
	label, workload, metric string
	scale                   float64
	parallel                bool // from par.json
}

// seedFigures lists the rows of the workloads that ran (a run limited by
// PHASES or WORKLOADS has no rows for the others).
func seedFigures(one, par *result.Report) []seedFigure {
	files, entries := param(one, "mass", "files"), param(one, "hugedir", "entries")
	all := []seedFigure{
		{files + " files · create/s", "mass", "create empty", 1, false},
		{files + " files · stat/s", "mass", "stat empty", 1, false},
		{files + " files · rename/s", "mass", "rename empty", 1, false},
		{files + " files · unlink/s", "mass", "delete empty", 1, false},
		{entries + "-entry dir · readdir entries/s (cold)", "hugedir", "readdir", 1, false},
		{entries + "-entry dir · stat every entry /s", "hugedir", "stat", 1, false},
		{"PostMark · transactions/s", "postmark", "transactions", 1, false},
		{files + " random-size files · write MiB/s", "mass", "create sized data", 1, false},
		{files + " random-size files · read MiB/s (cold)", "mass", "read sized data", 1, false},
		{"iozone " + param(one, "iozone", "workers") + "×" + param(one, "iozone", "file size") +
			", " + param(one, "iozone", "record size") + " records · write KiB/s", "iozone", "write", 1024, false},
		{"4 parallel creators · creates/s", "hugedir", "create", 1, true},
	}
	var out []seedFigure
	for _, f := range all {
		r := one
		if f.parallel {
			r = par
		}
		if ran(r, f.workload) {
			out = append(out, f)
		}
	}
	return out
}

// ran reports whether workload wl is in report r.
func ran(r *result.Report, wl string) bool {
	if r == nil {
		return false
	}
	for _, w := range r.Workloads {
		if w.Name == wl {
			return true
		}
	}
	return false
}

// param returns a workload parameter as the report states it, or "?".
func param(r *result.Report, wl, name string) string {
	if r == nil {
		return "?"
	}
	for _, w := range r.Workloads {
		if w.Name != wl {
			continue
		}
		for _, p := range w.Params {
			if p.Name == name {
				return p.Value
			}
		}
	}
	return "?"
}

// figureMedian returns a figure's median on a target, NaN when it was not
// measured or failed every round.
func figureMedian(r *result.Report, wl, metric, target string) float64 {
	if r == nil {
		return math.NaN()
	}
	for _, w := range r.Workloads {
		if w.Name != wl {
			continue
		}
		for _, m := range w.Metrics {
			if m.Name != metric {
				continue
			}
			for _, tr := range m.Results {
				if tr.Target == target && tr.OK() {
					return tr.Summary.Median
				}
			}
		}
	}
	return math.NaN()
}

func (f seedFigure) value(one, par *result.Report, target string) float64 {
	r := one
	if f.parallel {
		r = par
	}
	return figureMedian(r, f.workload, f.metric, target) * f.scale
}

// bestPeer returns the highest figure among the other file systems.
func bestPeer(ts []peerTarget, val func(string) float64) (float64, string) {
	best, who := math.NaN(), ""
	for _, t := range ts {
		if v := val(t.name); t.isPeer() && t.ok() && !math.IsNaN(v) && (math.IsNaN(best) || v > best) {
			best, who = v, t.label
		}
	}
	return best, who
}

func printSeedTable(ts []peerTarget, one, par *result.Report) {
	if one == nil {
		return
	}
	fmt.Println("\nOne mount (higher is better; medians over rounds)")
	fmt.Println()
	header(append(append([]string{"seed test · figure"}, labels(ts)...), "best peer"))
	for _, f := range seedFigures(one, par) {
		row := []string{f.label}
		val := func(t string) float64 { return f.value(one, par, t) }
		for _, t := range ts {
			row = append(row, cell(t, val(t.name)))
		}
		best, who := bestPeer(ts, val)
		row = append(row, withWho(best, who))
		fmt.Println("| " + strings.Join(row, " | ") + " |")
	}
}

func printRatios(ts []peerTarget, one, par *result.Report) {
	if one == nil {
		return
	}
	pairs := [][2]string{{"shoal-redis", "jfs-redis"}, {"shoal-pg", "jfs-pg"}, {"shoal-sqlite", ""}}
	fmt.Println("\nRatios (Shoal's figure over the peer's: above 1 Shoal is faster)")
	fmt.Println()
	header([]string{"seed test · figure", "Shoal Redis / JuiceFS Redis", "Shoal PG / JuiceFS PG", "Shoal SQLite / best peer", "Shoal SQLite / local"})
	for _, f := range seedFigures(one, par) {
		val := func(t string) float64 {
			if !targetOK(ts, t) {
				return math.NaN()
			}
			return f.value(one, par, t)
		}
		row := []string{f.label}
		for _, p := range pairs {
			peer := val(p[1])
			if p[1] == "" {
				peer, _ = bestPeer(ts, val)
			}
			row = append(row, ratio(val(p[0]), peer))
		}
		row = append(row, ratio(val("shoal-sqlite"), val("local")))
		fmt.Println("| " + strings.Join(row, " | ") + " |")
	}
}

// printFourTable shows, per target, how long four mounts took for four
// times the work of one: 4 × one mount's rate / four mounts' rate. 1 is
// perfect scaling, 4 is none, above 4 the mounts hinder each other.
func printFourTable(ts []peerTarget, one, four *result.Report) {
	if one == nil || four == nil {
		return
	}
	fmt.Println("\nFour mounts at once, each its own directory: 4× the work of one mount;")
	fmt.Println("time with four ÷ time with one (1.00 = perfect scaling, 4.00 = none; lower is better)")
	fmt.Println()
	header(append([]string{"seed test · figure"}, labels(ts)...))
	for _, f := range seedFigures(one, nil) {
		if f.parallel {
			continue
		}
		row := []string{f.label}
		for _, t := range ts {
			o, q := f.value(one, nil, t.name), f.value(four, nil, t.name)
			row = append(row, cellRatio(t, 4*o, q))
		}
		fmt.Println("| " + strings.Join(row, " | ") + " |")
	}
}

func printFsync(ts []peerTarget, res results) {
	fmt.Println("\nfsync of a small change: append 4 KiB, fsync (milliseconds, lower is better)")
	fmt.Println()
	header([]string{"target", "p50 ms", "p99 ms", "p50 / local", "p99 / local"})
	get := func(t, m string) float64 {
		if len(res[t][m]) == 0 {
			return math.NaN()
		}
		return median(res[t][m])
	}
	l50, l99 := get("local", "fsync_p50_ms"), get("local", "fsync_p99_ms")
	for _, t := range ts {
		p50, p99 := get(t.name, "fsync_p50_ms"), get(t.name, "fsync_p99_ms")
		fmt.Printf("| %s | %s | %s | %s | %s |\n", t.label, cell(t, p50), cell(t, p99), ratio(p50, l50), ratio(p99, l99))
	}
}

func printSkipped(ts []peerTarget) {
	for _, t := range ts {
		if !t.ok() {
			fmt.Printf("\n%s: not measured — %s\n", t.label, t.status)
		}
	}
}

func targetOK(ts []peerTarget, name string) bool {
	for _, t := range ts {
		if t.name == name {
			return t.ok()
		}
	}
	return false
}

func labels(ts []peerTarget) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.label)
	}
	return out
}

func header(cols []string) {
	fmt.Println("| " + strings.Join(cols, " | ") + " |")
	seps := []string{"---"}
	for range cols[1:] {
		seps = append(seps, "---:")
	}
	fmt.Println("|" + strings.Join(seps, "|") + "|")
}

// cell formats a figure: "—" for a skipped column, "err" for a failed one.
func cell(t peerTarget, v float64) string {
	switch {
	case !t.ok():
		return "—"
	case math.IsNaN(v):
		return "err"
	}
	return num(v)
}

func cellRatio(t peerTarget, a, b float64) string {
	if !t.ok() {
		return "—"
	}
	return ratio(a, b)
}

func ratio(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func withWho(v float64, who string) string {
	if math.IsNaN(v) {
		return "—"
	}
	return num(v) + " (" + who + ")"
}

// num prints three significant figures, whole numbers with thousands
// separators.
func num(v float64) string {
	if math.Abs(v) < 100 {
		return fmt.Sprintf("%.3g", v)
	}
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
