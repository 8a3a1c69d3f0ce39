package multihost

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"shoal/internal/testutil"
	"shoal/tests/isolate"
)

// TestQuotasTwoMounts: two mounts of a volume on PostgreSQL or Redis
// writing at once stay within a directory quota exactly (EDQUOT) and
// within the volume's capacity plus the bound docs/admin.md states
// (ENOSPC): per other mount, two thresholds of 1/16 of the capacity and
// what it has in flight.
func TestQuotasTwoMounts(t *testing.T) {
	cells := map[string]func(t *testing.T) string{
		"postgres+s3": func(t *testing.T) string { return isolate.PGSchemaURL(t, testutil.PGURL(t)) },
		"redis+s3":    func(t *testing.T) string { return isolate.RedisNamespaceURL(t, testutil.RedisURL(t)) },
	}
	for name, metaURL := range cells {
		t.Run(name, func(t *testing.T) {
			url := metaURL(t)
			v := testutil.NewVolumeWith(t, testutil.VolumeConfig{MetaURL: url, FormatArgs: []string{
				"--storage", "s3", "--bucket", isolate.S3Prefix(t, testutil.S3URL(t)), "--capacity", "10M"}})
			ms := mountN(t, v, 2)
			if err := os.Mkdir(ms[0].Path("site"), 0o755); err != nil {
				t.Fatal(err)
			}
			testutil.MustRun(t, "quota", "set", v.MetaURL, "--path", "/site", "--capacity", "3M")
			time.Sleep(3500 * time.Millisecond) // mounts re-read the quota list every 3 s

			start := time.Now()
			site := fillFromEach(t, ms, "site/", 8<<20, syscall.EDQUOT)
			t.Logf("site %d bytes in %v", site, time.Since(start))
			if site > 3<<20 {
				t.Fatalf("two mounts stored %d bytes under a 3 MiB directory quota", site)
			}
			start = time.Now()
			rest := fillFromEach(t, ms, "", 30<<20, syscall.ENOSPC)
			t.Logf("rest %d bytes in %v", rest, time.Since(start))
			const limit, bound = 10 << 20, 2*(10<<20)/16 + 4<<20
			if site+rest > limit+bound {
				t.Fatalf("two mounts stored %d bytes on a %d-byte volume, bound %d", site+rest, limit, bound)
			}
		})
	}
}

// fillFromEach has every mount write n bytes to its own file under prefix
// at once, fsyncing each MiB, expects each to fail with want, and returns
// the bytes stored.
func fillFromEach(t *testing.T, ms []*testutil.Mount, prefix string, n int, want syscall.Errno) int64 {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(ms))
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fillFile(m.Path(fmt.Sprintf("%s%d", prefix, i)), n)
		}()
	}
	wg.Wait()
	var total int64
	for i, err := range errs {
		if !errors.Is(err, want) {
			t.Errorf("mount %d writing %d bytes to %s: %v, want %v", i, n, prefix, err, want)
		}
		st, err := os.Stat(filepath.Join(ms[0].Dir, fmt.Sprintf("%s%d", prefix, i)))
		if err != nil {
			t.Fatal(err)
		}
		total += st.Size()
	}
	return total
}

// fillFile writes n bytes in 1 MiB writes, fsyncing each, then closes.
func fillFile(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for off := 0; off < n && err == nil; off += len(buf) {
		if _, err = f.Write(buf); err == nil {
			err = f.Sync()
		}
	}
	return errors.Join(err, f.Close())
}
