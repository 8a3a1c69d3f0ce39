package crash

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"shoal/internal/fsck"
	"shoal/internal/testutil"
)

// seed returns SHOAL_CRASH_SEED or a random seed, logged either way.
func seed(t *testing.T) uint64 {
	s := rand.Uint64()
	if v := os.Getenv("SHOAL_CRASH_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("SHOAL_CRASH_SEED=%q: %v", v, err)
		}
		s = n
	}
	t.Logf("seed %d (rerun with SHOAL_CRASH_SEED=%d)", s, s)
	return s
}

// rounds returns SHOAL_CRASH_ROUNDS or def.
func rounds(t *testing.T, def int) int {
	if v := os.Getenv("SHOAL_CRASH_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SHOAL_CRASH_ROUNDS=%q: want a positive number", v)
		}
		return n
	}
	return def
}

// runFsck runs shoal fsck --json with extra flags and returns its report
// and exit code.
func runFsck(t *testing.T, metaURL string, extra ...string) (*fsck.Report, testutil.Result) {
	t.Helper()
	args := append([]string{"fsck", "--json", "--progress=never"}, extra...)
	res := testutil.Run(t, append(args, metaURL)...)
	var rep fsck.Report
	if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil {
		t.Fatalf("shoal fsck: exit %d, output is not a report (%v)\nstdout: %s\nstderr: %s", res.Code, err, res.Stdout, res.Stderr)
	}
	return &rep, res
}

// checkAfterCrash runs fsck (it must find nothing but leaked objects and
// counter drift), then gc --grace 0s, then fsck again, which must find
// nothing at all left to collect.
func checkAfterCrash(t *testing.T, metaURL string) (leaked int64) {
	t.Helper()
	rep, res := runFsck(t, metaURL)
	if res.Code != 0 || rep.Damage() {
		t.Errorf("fsck after a crash: exit %d, damage %v: %s\n%s", res.Code, rep.Damage(), res.Stdout, res.Stderr)
	}
	leaked = rep.Leaked.Objects
	gc := testutil.Run(t, "gc", "--grace", "0s", "--progress=never", metaURL)
	if gc.Code != 0 {
		t.Errorf("gc --grace 0s: exit %d\n%s\n%s", gc.Code, gc.Stdout, gc.Stderr)
	}
	rep, res = runFsck(t, metaURL)
	if res.Code != 0 || rep.Leaked.Objects != 0 {
		t.Errorf("fsck after gc: exit %d, %d leaked objects left: %s", res.Code, rep.Leaked.Objects, res.Stdout)
	}
	return leaked
}

// notDrift returns the metadata problems that are not counter drift.
func notDrift(problems []string) []string {
	var out []string
	for _, p := range problems {
		if !fsck.CounterDrift(p) {
			out = append(out, p)
		}
	}
	return out
}

// contains reports whether s contains every one of subs.
func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
