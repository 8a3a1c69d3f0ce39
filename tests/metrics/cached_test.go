package metrics_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"shoal/internal/testutil"
	"shoal/tests/isolate"
)

// TestRedisStatsFromCache mounts one Redis volume twice, one of the
// mounts --strict. Each creates files in a directory of its own and,
// once the kernel's caches have expired, stats them all: the default
// mount answers most of those lookups from its client-side cache (no
// engine transaction), the strict one answers none from it.
func TestRedisStatsFromCache(t *testing.T) {
	v := testutil.NewVolumeWith(t, testutil.VolumeConfig{MetaURL: isolate.RedisNamespaceURL(t, testutil.RedisURL(t))})
	a := v.Mount(t, "--metrics", "127.0.0.1:0")
	dirB := filepath.Join(v.Dir, "mnt-b")
	if err := os.Mkdir(dirB, 0o755); err != nil {
		t.Fatal(err)
	}
	b := v.MountAt(t, dirB, "--metrics", "127.0.0.1:0", "--strict")
	const n = 300
	for _, m := range []*testutil.Mount{a, b} {
		dir := m.Path("d-" + filepath.Base(m.Dir))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprint("f", i)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(1500 * time.Millisecond) // past the kernel's 1 s timeouts
	for _, m := range []*testutil.Mount{a, b} {
		url := endpoint(t, m)
		before := scrape(t, url)
		dir := m.Path("d-" + filepath.Base(m.Dir))
		for i := range n {
			if _, err := os.Stat(filepath.Join(dir, fmt.Sprint("f", i))); err != nil {
				t.Fatal(err)
			}
		}
		after := scrape(t, url)
		cached := after.Engine.Cached - before.Engine.Cached
		lookups := delta(before, after, "lookup").Count
		t.Logf("%s: %d lookups, %d engine reads answered from the cache", m.Dir, lookups, cached)
		switch {
		case m == b && cached != 0:
			t.Errorf("--strict mount answered %d reads from the client-side cache, want none", cached)
		case m == a && cached < n/2:
			t.Errorf("default mount answered %d of %d lookups from the client-side cache, want most", cached, lookups)
		}
	}
}
