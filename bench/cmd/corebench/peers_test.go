package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"shoal/internal/bench/result"
	"shoal/internal/bench/stats"
	"shoal/internal/bench/workload"
)

func TestNum(t *testing.T) {
	for v, want := range map[float64]string{0.3125: "0.312", 12.34: "12.3", 999.6: "1,000", 1234567: "1,234,567"} {
		if got := num(v); got != want {
			t.Errorf("num(%v) = %q, want %q", v, got, want)
		}
	}
}

// fakeReport builds a shoal bench report with one figure per target.
func fakeReport(wl, metric string, vals map[string]float64, params ...workload.Param) result.Report {
	m := result.Metric{Name: metric}
	for _, name := range []string{"local", "shoal-redis", "jfs-redis", "moosefs"} {
		v, ok := vals[name]
		if !ok {
			continue
		}
		m.Results = append(m.Results, result.TargetResult{Target: name, Summary: stats.Summary{N: 1, Median: v}})
	}
	return result.Report{Workloads: []result.Workload{{Name: wl, Params: params, Metrics: []result.Metric{m}}}}
}

func writeJSON(t *testing.T, path string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPeersTables checks the figures, the best peer, the ratios, the
// four-mounts time ratio and a skipped column.
func TestPeersTables(t *testing.T) {
	dir := t.TempDir()
	ts := "local\tlocal\tok\nshoal-redis\tShoal Redis\tok\njfs-redis\tJuiceFS Redis\tok\nmoosefs\tMooseFS\tmfsmount failed: no\n"
	if err := os.WriteFile(filepath.Join(dir, "targets.tsv"), []byte(ts), 0o644); err != nil {
		t.Fatal(err)
	}
	one := map[string]float64{"local": 10000, "shoal-redis": 2000, "jfs-redis": 1000, "moosefs": 5000}
	four := map[string]float64{"local": 20000, "shoal-redis": 4000, "jfs-redis": 1000}
	writeJSON(t, filepath.Join(dir, "one.json"), fakeReport("mass", "create empty", one, workload.Param{Name: "files", Value: "10000"}))
	writeJSON(t, filepath.Join(dir, "four.json"), fakeReport("mass", "create empty", four))
	fsync := "local fsync_p50_ms 0.5\nlocal fsync_p99_ms 2\nshoal-redis fsync_p50_ms 1\nshoal-redis fsync_p50_ms 3\nshoal-redis fsync_p99_ms 8\n"
	if err := os.WriteFile(filepath.Join(dir, "fsync.txt"), []byte(fsync), 0o644); err != nil {
		t.Fatal(err)
	}
	out := capture(t, func() error { return peers(dir) })
	for _, want := range []string{
		"| 10000 files · create/s | 10,000 | 2,000 | 1,000 | — | 1,000 (JuiceFS Redis) |", // MooseFS skipped: not the best peer
		"| 10000 files · create/s | 2.00 | — | — | — |",                                   // Shoal Redis / JuiceFS Redis; no SQLite, no PG
		"| 10000 files · create/s | 2.00 | 2.00 | 4.00 | — |",                             // 4 × one / four
		"| Shoal Redis | 2 | 8 | 4.00 | 4.00 |",                                           // median of rounds 1 and 3
		"MooseFS: not measured — mfsmount failed: no",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "iozone") || strings.Contains(out, "PostMark") {
		t.Errorf("rows of workloads that did not run:\n%s", out)
	}
}

func capture(t *testing.T, fn func() error) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() { b, _ := io.ReadAll(r); done <- string(b) }()
	ferr := fn()
	w.Close()
	os.Stdout = old
	out := <-done
	if ferr != nil {
		t.Fatal(ferr)
	}
	return out
}
