package metrics_test

import (
	"encoding/json"
	"strings"
	"testing"

	"shoal/internal/metrics"
	"shoal/internal/testutil"
)

// TestCountersFollowWorkload writes k empty files and one file of n
// bytes, remounts, reads the file back, and checks the FUSE, engine,
// object and cache counters against the workload, and that
// `shoal stats --once --json` reports the same totals as /metrics.
func TestCountersFollowWorkload(t *testing.T) {
	const k, n = 20, 3<<20 + 5
	data := pattern(n)
	v := testutil.NewVolume(t)
	m := v.Mount(t, "--metrics", "127.0.0.1:0")
	url := endpoint(t, m)
	s0 := scrape(t, url)
	writeFiles(t, m, k, data)
	s1 := settled(t, url)

	if got := s1.WrittenBytes - s0.WrittenBytes; got != n {
		t.Errorf("written bytes moved by %d, want %d", got, n)
	}
	if got := delta(s0, s1, "create"); got.Count != k+1 || got.Errors != 0 {
		t.Errorf("create moved by %+v, want %d requests without errors", got, k+1)
	}
	if got := delta(s0, s1, "mkdir").Count; got != 1 {
		t.Errorf("mkdir moved by %d, want 1", got)
	}
	if got := delta(s0, s1, "write"); got.Count < 4 || got.Count > 8 || got.Seconds <= 0 {
		t.Errorf("write moved by %+v: want 4 to 8 requests (1 MiB at most each), with their time", got)
	}
	if got := s1.Engine.Updates - s0.Engine.Updates; got < k+2 || got > k+10 {
		t.Errorf("engine updates moved by %d for %d creates and a mkdir", got, k+1)
	}
	if got := objDelta(s0, s1, "put"); got.Count < 1 || got.Count > 4 || got.Errors != 0 {
		t.Errorf("object puts moved by %+v, want the one block (and a few small objects at most)", got)
	}
	if got := s1.PutBytes - s0.PutBytes; got < n || got > n+n/50 {
		t.Errorf("object put bytes moved by %d for %d data bytes", got, n)
	}
	m.Unmount(t)

	m = v.Mount(t, "--metrics", "127.0.0.1:0")
	url = endpoint(t, m)
	readBack(t, m, data)
	s2 := settled(t, url)
	if s2.ReadBytes != n || s2.WrittenBytes != 0 {
		t.Errorf("after reading %d bytes on a fresh mount: read %d, written %d", n, s2.ReadBytes, s2.WrittenBytes)
	}
	if got := s2.Objects["get"]; got.Count < 1 || got.Errors != 0 {
		t.Errorf("object gets %+v, want at least the one block", got)
	}
	if s2.CacheMisses < 1 || s2.FetchedBytes < n {
		t.Errorf("cache misses %d, fetched %d bytes: want the block fetched (%d bytes)", s2.CacheMisses, s2.FetchedBytes, n)
	}
	if s2.Engine.Views < 1 || s2.HeartbeatAge < 0 || s2.OpenFiles != 0 {
		t.Errorf("engine views %d, heartbeat age %v, open files %d", s2.Engine.Views, s2.HeartbeatAge, s2.OpenFiles)
	}

	res := testutil.MustRun(t, "stats", "--once", "--json", m.Dir)
	var st metrics.Snapshot
	if err := json.Unmarshal([]byte(res.Stdout), &st); err != nil {
		t.Fatalf("stats --once --json: %v\n%s", err, res.Stdout)
	}
	if st.ReadBytes != n || st.Ops["read"].Count != s2.Ops["read"].Count || st.Objects["get"].Count != s2.Objects["get"].Count ||
		st.CacheMisses != s2.CacheMisses || st.Engine.Updates != s2.Engine.Updates {
		t.Errorf("stats --once --json disagrees with /metrics:\nstats:   %+v\nmetrics: %+v", st, s2)
	}
	human := testutil.MustRun(t, "stats", "--once", m.Dir).Stdout
	for _, want := range []string{"FUSE", "read", "engine", "objects", "cache    hit ratio", "heartbeat"} {
		if !strings.Contains(human, want) {
			t.Errorf("stats --once lacks %q:\n%s", want, human)
		}
	}
}

// TestStatsWithoutMetrics: stats on a mount without --metrics says how to
// enable them, and on a directory with nothing mounted says so; both fail.
func TestStatsWithoutMetrics(t *testing.T) {
	v := testutil.NewVolume(t)
	m := v.Mount(t)
	res := testutil.Run(t, "stats", "--once", m.Dir)
	if res.Code != 1 || !strings.Contains(res.Stderr, "--metrics 127.0.0.1:PORT") {
		t.Errorf("stats on a mount without metrics: exit %d, %q", res.Code, res.Stderr)
	}
	m.Unmount(t)
	res = testutil.Run(t, "stats", "--once", v.Mountpoint)
	if res.Code != 4 || !strings.Contains(res.Stderr, "nothing is mounted") {
		t.Errorf("stats on an empty directory: exit %d, %q", res.Code, res.Stderr)
	}
	if res = testutil.Run(t, "stats", "--json", v.Mountpoint); res.Code != 2 {
		t.Errorf("stats --json without --once: exit %d, want 2", res.Code)
	}
}
