package benchlab

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"shoal/internal/bench/result"
	"shoal/internal/testutil"
)

// allWorkloads are the workloads of shoal bench in run order.
var allWorkloads = []string{"iozone", "bonnie", "postmark", "mass", "hugedir"}

// tempDirs returns n fresh directories.
func tempDirs(t *testing.T, n int) []string {
	t.Helper()
	root := t.TempDir()
	out := make([]string, n)
	for i := range out {
		out[i] = filepath.Join(root, string(rune('a'+i)))
		if err := os.Mkdir(out[i], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// checkReport checks a report of a clean run: every workload and figure
// present for every target with one sample per round, and no errors.
func checkReport(t *testing.T, rep *result.Report, targets, workloads []string, rounds int) {
	t.Helper()
	if rep.Schema != result.Schema || rep.RunID == "" || rep.Errors != 0 {
		t.Errorf("schema %q run %q errors %d: %v", rep.Schema, rep.RunID, rep.Errors, reportErrors(rep))
	}
	if m := rep.Machine; m.Cores < 1 || m.MemBytes <= 0 || m.Kernel == "" {
		t.Errorf("machine facts %+v", m)
	}
	if len(rep.Targets) != len(targets) {
		t.Fatalf("targets %+v", rep.Targets)
	}
	for i, tg := range rep.Targets {
		if tg.Name != targets[i] || len(tg.FS) != len(tg.Dirs) {
			t.Errorf("target %d: %+v", i, tg)
		}
		for _, fs := range tg.FS {
			if fs.StatfsType == "" || fs.MountType == "" || fs.Error != "" {
				t.Errorf("target %s: file system facts %+v", tg.Name, fs)
			}
		}
	}
	var names []string
	for _, w := range rep.Workloads {
		names = append(names, w.Name)
		if len(w.Params) == 0 || len(w.Metrics) == 0 {
			t.Errorf("workload %s: %d params, %d figures", w.Name, len(w.Params), len(w.Metrics))
		}
		for _, m := range w.Metrics {
			checkMetric(t, w.Name, m, len(targets), rounds)
		}
	}
	if strings.Join(names, ",") != strings.Join(workloads, ",") {
		t.Errorf("workloads %v, want %v", names, workloads)
	}
}

func checkMetric(t *testing.T, w string, m result.Metric, targets, rounds int) {
	t.Helper()
	if m.Unit == "" || len(m.Results) != targets {
		t.Errorf("%s/%s: unit %q, %d results", w, m.Name, m.Unit, len(m.Results))
		return
	}
	for i, r := range m.Results {
		if r.Summary.N != rounds || len(r.Samples) != rounds || r.Summary.Median <= 0 || !r.Ratio.Valid() {
			t.Errorf("%s/%s on %s: %+v", w, m.Name, r.Target, r)
		}
		if i == 0 && r.Ratio != 1 {
			t.Errorf("%s/%s: first target's ratio %v", w, m.Name, r.Ratio)
		}
	}
}

// checkHTML checks the page holds one chart per workload and every target.
func checkHTML(t *testing.T, path string, targets []string, workloads int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if n := strings.Count(page, "<svg"); n != workloads {
		t.Errorf("%d charts, want %d", n, workloads)
	}
	for _, tg := range targets {
		if !strings.Contains(page, tg) {
			t.Errorf("page does not name target %s", tg)
		}
	}
	for _, bad := range []string{"http://", "https://", "<script", "<link", "@import"} {
		if strings.Contains(page, bad) {
			t.Errorf("page is not self-contained: has %q", bad)
		}
	}
}

func TestEveryWorkloadOnTempDirs(t *testing.T) {
	d := tempDirs(t, 3)
	html := filepath.Join(t.TempDir(), "report.html")
	targets := []string{"one", "two"}
	rep := benchJSON(t, "--quick", "--clients", "2", "--include-close", "--html", html, "--progress",
		"one="+d[0], "two="+d[1]+","+d[2])
	checkReport(t, rep, targets, allWorkloads, 2)
	if rep.Settings.Clients != 2 || len(rep.Targets[1].Dirs) != 2 || rep.Settings.Order != "interleaved" {
		t.Errorf("settings %+v, targets %+v", rep.Settings, rep.Targets)
	}
	checkHTML(t, html, targets, len(allWorkloads))
	screenshot(t, html, len(targets))
	for _, dir := range d {
		assertEmpty(t, dir)
	}
}

func TestTableAndProgress(t *testing.T) {
	d := tempDirs(t, 1)
	res := bench(t, "mass", "hugedir", "--quick", "--rounds", "1", "--progress", d[0])
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	for _, want := range []string{"mass —", "hugedir —", "create empty", "rename empty", "readdir", "ops/s"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, res.Stdout)
		}
	}
	// Off a terminal, --progress prints one line per finished phase.
	if n := strings.Count(res.Stderr, "100%"); n != 7+4 {
		t.Errorf("%d finished phase lines, want 11:\n%s", n, res.Stderr)
	}
	assertEmpty(t, d[0])
}

func TestIozoneAutomaticMode(t *testing.T) {
	d := tempDirs(t, 1)
	rep := benchJSON(t, "iozone", "--quick", "--rounds", "1", "--iozone-auto", "--include-close", "--iozone-fsync", d[0])
	checkReport(t, rep, []string{d[0]}, []string{"iozone"}, 1)
	// 64 KiB..256 KiB files with 4 KiB..file-size records: 5+6+7 sets of
	// the six automatic-mode tests.
	if n := len(rep.Workloads[0].Metrics); n != 18*6 {
		t.Errorf("%d figures, want %d", n, 18*6)
	}
	if got := rep.Workloads[0].Metrics[0].Name; got != "write 64KiB/4KiB" {
		t.Errorf("first figure %q", got)
	}
}

func TestEveryWorkloadOnShoalMount(t *testing.T) {
	testutil.RequireFUSE(t)
	vol := testutil.NewVolume(t)
	mnt := vol.Mount(t)
	local := tempDirs(t, 1)[0]
	html := filepath.Join(t.TempDir(), "report.html")
	targets := []string{"local", "shoal"}
	rep := benchJSON(t, "--quick", "--rounds", "1", "--html", html, "local="+local, "shoal="+mnt.Dir)
	checkReport(t, rep, targets, allWorkloads, 1)
	if fs := rep.Targets[1].FS[0]; !strings.HasPrefix(fs.MountType, "fuse") || fs.StatfsType != "fuse" {
		t.Errorf("shoal target's file system %+v", fs)
	}
	checkHTML(t, html, targets, len(allWorkloads))
	screenshot(t, html, len(targets))
	assertEmpty(t, local)
	assertEmpty(t, mnt.Dir)
}

// requireRoot skips tests that need to mount or switch users.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: needs root (mounts a tmpfs or switches users)")
	}
}

func TestFullFileSystemIsReportedNotFatal(t *testing.T) {
	requireRoot(t)
	dir := tempDirs(t, 1)[0]
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	defer exec.Command("umount", dir).Run()
	res := bench(t, "--json", "--quick", "--rounds", "1", "iozone", "mass", dir)
	if res.Code != 1 {
		t.Errorf("exit %d, want 1 (measurements failed)", res.Code)
	}
	rep := decode(t, res.Stdout)
	errs := strings.Join(reportErrors(rep), "\n")
	if rep.Errors == 0 || !strings.Contains(errs, "no space left on device") {
		t.Errorf("errors %d:\n%s", rep.Errors, errs)
	}
	// mass creation fits in 3 MiB: a failure in one workload spares the next.
	if v := metric(t, rep, "mass", "create empty", 0); v <= 0 {
		t.Errorf("mass create empty %v", v)
	}
	assertEmpty(t, dir)
}

func TestPermissionDeniedIsReported(t *testing.T) {
	requireRoot(t)
	dir := tempDirs(t, 1)[0] // root's, mode 0755: nobody cannot write
	for p := filepath.Dir(dir); p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o755) // let nobody reach it
	}
	cmd := exec.Command(testutil.Binary(t), "bench", "--json", "--quick", "--rounds", "1", "hugedir", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Dir = "/"
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err == nil || !errorsAs(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v", err)
	}
	rep := decode(t, string(out))
	if errs := strings.Join(reportErrors(rep), "\n"); !strings.Contains(errs, "permission denied") {
		t.Errorf("errors:\n%s", errs)
	}
	if rep.Settings.CacheDrop != "not permitted" || len(rep.Notes) == 0 {
		t.Errorf("cache drop %q, notes %v", rep.Settings.CacheDrop, rep.Notes)
	}
	assertEmpty(t, dir)
}

func TestUsageErrors(t *testing.T) {
	d := tempDirs(t, 1)[0]
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"iozone"}, 2},
		{[]string{filepath.Join(d, "missing")}, 4},
		{[]string{"--iozone-size", "lots", d}, 2},
		{[]string{"--iozone-tests", "bogus", d}, 2},
		{[]string{"--postmark-read-bias", "11", d}, 2},
		{[]string{"x=" + d, "x=" + d}, 2},
	} {
		if res := bench(t, tc.args...); res.Code != tc.code {
			t.Errorf("shoal bench %v: exit %d, want %d (%s)", tc.args, res.Code, tc.code, res.Stderr)
		}
	}
	assertEmpty(t, d)
}

func TestInterruptCleansUpAndReports(t *testing.T) {
	dir := tempDirs(t, 1)[0]
	cmd := exec.Command(testutil.Binary(t), "bench", "--json", "hugedir", "--hugedir-entries", "1000000", dir)
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the run has made its files, then interrupt it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if n, _ := filepath.Glob(filepath.Join(dir, "shoal-bench.*", "hugedir-r1", "c0", "huge", "*")); len(n) > 100 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the run made no files in 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errorsAs(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("exit after interrupt: %v", err)
	}
	rep := decode(t, out.String())
	if len(rep.Notes) == 0 || !strings.Contains(strings.Join(rep.Notes, " "), "interrupted") {
		t.Errorf("notes %v", rep.Notes)
	}
	assertEmpty(t, dir)
}
