package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"shoal/internal/bench/workload"
)

// probe is a workload that records where and when it ran and fails with
// ENOSPC on directories containing failOn.
type probe struct {
	mu     sync.Mutex
	calls  []string
	failOn string
}

func (p *probe) Name() string             { return "probe" }
func (p *probe) Params() []workload.Param { return []workload.Param{{Name: "x", Value: "1"}} }
func (p *probe) Metrics(ms []workload.Measure) []workload.Metric {
	return workload.PerPhase(ms)
}

func (p *probe) Run(c *workload.Client) {
	c.Phase(workload.Phase{Name: "touch", Unit: workload.UnitOps, Cold: true}, func(m *workload.Meter) error {
		p.mu.Lock()
		p.calls = append(p.calls, c.Dir)
		p.mu.Unlock()
		if p.failOn != "" && strings.Contains(c.Dir, p.failOn) {
			return &os.PathError{Op: "write", Path: c.Dir, Err: syscall.ENOSPC}
		}
		if err := os.WriteFile(filepath.Join(c.Dir, "f"), []byte("x"), 0o644); err != nil {
			return err
		}
		m.Add(0, 1)
		return nil
	})
}

func targets(t *testing.T, names ...string) []Target {
	root := t.TempDir()
	var out []Target
	for _, n := range names {
		d := filepath.Join(root, n)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		out = append(out, Target{Name: n, Dirs: []string{d}})
	}
	return out
}

func TestRunInterleavesTargets(t *testing.T) {
	p := &probe{}
	ts := targets(t, "A", "B", "C")
	rep := Run(context.Background(), Options{Targets: ts, Workloads: []workload.Workload{p}, Rounds: 2})
	var order []string
	for _, dir := range p.calls {
		for _, tg := range ts {
			if strings.HasPrefix(dir, tg.Dirs[0]+"/") {
				order = append(order, tg.Name+strings.Split(filepath.Base(filepath.Dir(dir)), "-")[1])
			}
		}
	}
	if got := strings.Join(order, " "); got != "Ar1 Br1 Cr1 Ar2 Br2 Cr2" {
		t.Errorf("order %q", got)
	}
	if rep.Errors != 0 || len(rep.Workloads) != 1 || len(rep.Workloads[0].Metrics) != 1 {
		t.Fatalf("report %+v", rep)
	}
	m := rep.Workloads[0].Metrics[0]
	if len(m.Results) != 3 || m.Results[1].Target != "B" || m.Results[0].Summary.N != 2 || !m.Results[2].Ratio.Valid() {
		t.Errorf("metric %+v", m)
	}
	assertClean(t, ts)
}

func TestRunReportsErrorsAndCleansUp(t *testing.T) {
	p := &probe{failOn: "/B/"}
	ts := targets(t, "A", "B")
	rep := Run(context.Background(), Options{Targets: ts, Workloads: []workload.Workload{p}, Rounds: 3})
	if rep.Errors != 3 {
		t.Errorf("errors %d, want 3", rep.Errors)
	}
	rs := rep.Workloads[0].Metrics[0].Results
	if !rs[0].OK() || rs[1].OK() || len(rs[1].Errors) != 3 || !strings.Contains(rs[1].Errors[0], "no space left") {
		t.Errorf("results %+v", rs)
	}
	if rs[1].Ratio.Valid() {
		t.Errorf("ratio of a failed target %v", rs[1].Ratio)
	}
	assertClean(t, ts)
}

func TestRunWithSeveralDirsAndClients(t *testing.T) {
	p := &probe{}
	ts := targets(t, "x", "y")
	multi := Target{Name: "xy", Dirs: []string{ts[0].Dirs[0], ts[1].Dirs[0]}}
	rep := Run(context.Background(), Options{Targets: []Target{multi}, Workloads: []workload.Workload{p}, Clients: 4})
	perDir := map[string]int{}
	for _, d := range p.calls {
		perDir[filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(d))))]++
	}
	if perDir["x"] != 2 || perDir["y"] != 2 {
		t.Errorf("clients per dir %v (calls %v)", perDir, p.calls)
	}
	if r := rep.Workloads[0].Metrics[0].Results[0]; r.Summary.N != 1 || len(rep.Targets[0].FS) != 2 {
		t.Errorf("report %+v", rep)
	}
	assertClean(t, ts)
}

func TestCancelledRunSaysSo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ts := targets(t, "A")
	rep := Run(ctx, Options{Targets: ts, Workloads: []workload.Workload{&probe{}}})
	if len(rep.Notes) == 0 || !strings.Contains(rep.Notes[0], "interrupted") {
		t.Errorf("notes %v", rep.Notes)
	}
	assertClean(t, ts)
}

func TestCacheDropper(t *testing.T) {
	d := newCacheDropper(true)
	d.path = filepath.Join(t.TempDir(), "missing", "drop_caches")
	if d.drop() || d.status() != "not permitted" || !strings.Contains(d.note(), "could not be dropped") {
		t.Errorf("failed drop: status %q note %q", d.status(), d.note())
	}
	ok := newCacheDropper(true)
	ok.path = filepath.Join(t.TempDir(), "drop_caches")
	if !ok.drop() || ok.status() != "dropped" || ok.note() != "" {
		t.Errorf("drop: status %q", ok.status())
	}
	if b, _ := os.ReadFile(ok.path); string(b) != "3\n" {
		t.Errorf("wrote %q", b)
	}
	if off := newCacheDropper(false); off.drop() || off.status() != "disabled" {
		t.Error("disabled dropper dropped")
	}
}

func TestParseTarget(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp":        "/tmp [/tmp]",
		"local=/tmp":  "local [/tmp]",
		"/a,/b":       "/a,/b [/a /b]",
		"pair=/a, /b": "pair [/a /b]",
		"/x/y=z":      "/x/y=z [/x/y=z]",
	} {
		tg, err := ParseTarget(in)
		if got := fmt.Sprintf("%s %v", tg.Name, tg.Dirs); err != nil || got != want {
			t.Errorf("ParseTarget(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	if _, err := ParseTarget("name="); err == nil {
		t.Error("empty target accepted")
	}
}

// assertClean checks that no run directory is left in the targets.
func assertClean(t *testing.T, ts []Target) {
	t.Helper()
	for _, tg := range ts {
		for _, d := range tg.Dirs {
			left, _ := os.ReadDir(d)
			if len(left) != 0 {
				t.Errorf("%s: left %s", d, left[0].Name())
			}
		}
	}
}
