package benchlab

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"shoal/internal/bench/result"
	"shoal/internal/testutil"
)

func TestMain(m *testing.M) { os.Exit(testutil.Main(m)) }

// bench runs `shoal bench args...` and returns the result.
func bench(t *testing.T, args ...string) testutil.Result {
	t.Helper()
	return testutil.Run(t, append([]string{"bench"}, args...)...)
}

// benchJSON runs `shoal bench --json args...`, requires exit 0 and returns
// the decoded report.
func benchJSON(t *testing.T, args ...string) *result.Report {
	t.Helper()
	res := bench(t, append([]string{"--json"}, args...)...)
	rep := decode(t, res.Stdout)
	if res.Code != 0 {
		t.Fatalf("shoal bench %s: exit %d\nstderr: %s\nerrors: %v", strings.Join(args, " "), res.Code, res.Stderr, reportErrors(rep))
	}
	return rep
}

func decode(t *testing.T, out string) *result.Report {
	t.Helper()
	var rep result.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("decoding the JSON report: %v\n%s", err, out)
	}
	return &rep
}

// reportErrors lists every failed sample of a report.
func reportErrors(rep *result.Report) []string {
	var out []string
	for _, w := range rep.Workloads {
		for _, m := range w.Metrics {
			for _, r := range m.Results {
				for _, e := range r.Errors {
					out = append(out, w.Name+"/"+m.Name+"/"+r.Target+": "+e)
				}
			}
		}
	}
	return out
}

// metric returns the median of workload w's figure name on target index i.
func metric(t *testing.T, rep *result.Report, w, name string, i int) float64 {
	t.Helper()
	for _, wl := range rep.Workloads {
		if wl.Name != w {
			continue
		}
		for _, m := range wl.Metrics {
			if m.Name == name {
				r := m.Results[i]
				if !r.OK() {
					t.Fatalf("%s/%s failed: %v", w, name, r.Errors)
				}
				return r.Summary.Median
			}
		}
	}
	t.Fatalf("report has no figure %s/%s", w, name)
	return 0
}

// requireTool returns the path of an external program, skipping the test
// when it is missing (a failure under SHOAL_REQUIRE_SERVICES=1).
func requireTool(t *testing.T, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := "skipping: " + strings.Join(names, "/") + " is not installed (scripts install it from Debian's packages)"
	if os.Getenv(testutil.EnvRequireServices) == "1" {
		t.Fatalf("%s (SHOAL_REQUIRE_SERVICES=1 makes this a failure)", msg)
	}
	t.Skip(msg)
	return ""
}

// assertEmpty fails unless dir holds nothing (shoal bench cleaned up).
func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("%s: shoal bench left %s behind", dir, left[0].Name())
	}
}
