package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"shoal/internal/bench/machine"
	"shoal/internal/bench/result"
	"shoal/internal/bench/workload"
)

// sample builds a report of two targets, one figure failing on the second.
func sample() *result.Report {
	tab := result.NewTable([]string{"local", "<b>shoal</b>"})
	for round := 1; round <= 3; round++ {
		f := float64(round)
		tab.Add("iozone", []workload.Param{{Name: "record size", Value: "4KiB"}}, "local", round, []workload.Metric{
			{Name: "write", Unit: workload.UnitMiBps, Value: 100 + f},
			{Name: "read", Unit: workload.UnitMiBps, Value: 200 + f, Cold: true},
		})
		tab.Add("iozone", nil, "<b>shoal</b>", round, []workload.Metric{
			{Name: "write", Unit: workload.UnitMiBps, Value: 50 + f},
			{Name: "read", Unit: workload.UnitMiBps, Err: errString("read x: input/output error")},
		})
	}
	rep := &result.Report{
		Schema: result.Schema, RunID: "run1", Started: time.Unix(0, 0).UTC(), Finished: time.Unix(60, 0).UTC(),
		Settings: result.Settings{Rounds: 3, Clients: 1, DropCaches: true, CacheDrop: "dropped", Order: "interleaved"},
		Machine:  machine.Facts{CPUModel: "Test CPU", Cores: 2, MemBytes: 8 << 30, Kernel: "Linux 6"},
		Targets: []result.Target{
			{Name: "local", Dirs: []string{"/tmp"}, FS: []machine.FS{{MountType: "ext4", Source: "/dev/vda", MountPoint: "/"}}},
			{Name: "<b>shoal</b>", Dirs: []string{"/mnt/s"}, FS: []machine.FS{{MountType: "fuse.shoal", Source: "shoal", MountPoint: "/mnt/s"}}},
		},
		Notes: []string{"a note"},
	}
	rep.Workloads, rep.Errors = tab.Workloads()
	return rep
}

type errString string

func (e errString) Error() string { return string(e) }

func TestTableFigures(t *testing.T) {
	rep := sample()
	if rep.Errors != 3 {
		t.Fatalf("errors %d", rep.Errors)
	}
	w := rep.Workloads[0].Metrics[0].Results
	if w[0].Summary.Median != 102 || w[1].Summary.Median != 52 || math.Abs(float64(w[1].Ratio)-52.0/102) > 1e-9 {
		t.Fatalf("write results %+v", w)
	}
	var b bytes.Buffer
	if err := Table(&b, rep); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"iozone", "record size 4KiB", "write", "102.0 ±1%", "52.00 ±2%", "0.51×", "read (cold)", "ERROR 3/3", "input/output error", "note: a note", "3 measurement(s) failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestRatioFormat(t *testing.T) {
	for in, want := range map[float64]string{0.5123: "0.51×", 2: "2.00×", 0.0021234: "0.0021×", math.NaN(): "–"} {
		if got := ratio(result.Float(in)); got != want {
			t.Errorf("ratio(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	rep := sample()
	var b bytes.Buffer
	if err := JSON(&b, rep); err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	if raw["schema"] != "shoal-bench/1" {
		t.Errorf("schema %v", raw["schema"])
	}
	back, err := ReadJSON(&b)
	if err != nil {
		t.Fatal(err)
	}
	r := back.Workloads[0].Metrics[1].Results[1]
	if r.Ratio.Valid() || len(r.Errors) != 3 || r.Summary.N != 0 {
		t.Errorf("failed figure after round trip %+v", r)
	}
	if got := back.Workloads[0].Metrics[0].Results[1].Ratio; math.Abs(float64(got)-52.0/102) > 1e-9 {
		t.Errorf("ratio %v", got)
	}
}

func TestHTMLIsSelfContainedAndEscaped(t *testing.T) {
	var b bytes.Buffer
	if err := HTML(&b, sample()); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"<svg", Palette[0], Palette[1], "Test CPU", "fuse.shoal", "0.51×", "failed: read x: input/output error", "&lt;b&gt;shoal&lt;/b&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{"<b>shoal</b>", "http://", "https://", "<script", "<link"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
}

func TestChartGeometry(t *testing.T) {
	rep := sample()
	svg := Chart(rep.Workloads[0], []string{"local", "shoal"})
	// Bars scale to the largest sample of the figure (local's 103 MiB/s
	// write): 102/103 and 52/103 of the 430-unit bar area.
	for _, want := range []string{`width="425.8"`, `width="217.1"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("svg lacks %s: %s", want, svg)
		}
	}
	if strings.Count(svg, "<rect") != 2+3 { // legend 2, write 2, read 1
		t.Errorf("%d rects", strings.Count(svg, "<rect"))
	}
}
