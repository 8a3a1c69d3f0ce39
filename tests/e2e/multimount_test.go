package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shoal/internal/testutil"
	"shoal/tests/isolate"
)

// twoMounts mounts one volume twice on this machine, as two clients of the
// same engine and store would be.
func twoMounts(t *testing.T, extra ...string) (*testutil.Mount, *testutil.Mount) {
	t.Helper()
	return twoMountsOn(t, "", extra...)
}

// twoMountsOn is twoMounts on a volume of the engine metaURL names ("":
// SQLite in the volume's directory).
func twoMountsOn(t *testing.T, metaURL string, extra ...string) (*testutil.Mount, *testutil.Mount) {
	t.Helper()
	testutil.RequireFUSE(t)
	v := testutil.NewVolumeWith(t, testutil.VolumeConfig{MetaURL: metaURL})
	second := filepath.Join(v.Dir, "mnt2")
	ok(t, os.Mkdir(second, 0o755), "mkdir")
	return v.Mount(t, extra...), v.MountAt(t, second, extra...)
}

// forEngines runs fn on each metadata engine, given a META-URL for a
// fresh volume ("" for SQLite in the volume's directory).
func forEngines(t *testing.T, fn func(t *testing.T, metaURL string)) {
	for _, e := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "" }},
		{"postgres", func(t *testing.T) string { return isolate.PGSchemaURL(t, testutil.PGURL(t)) }},
		{"redis", func(t *testing.T) string { return isolate.RedisNamespaceURL(t, testutil.RedisURL(t)) }},
	} {
		t.Run(e.name, func(t *testing.T) { fn(t, e.url(t)) })
	}
}

// TestCloseToOpenStrict: with kernel caches off, whatever one mount wrote
// and closed is what the next open on the other mount sees, at once.
func TestCloseToOpenStrict(t *testing.T) {
	a, b := twoMounts(t, "--attr-timeout", "0", "--entry-timeout", "0", "--negative-timeout", "0")
	testCloseToOpen(t, a, b, 0)
}

// TestCloseToOpenDefault: with the default 1 s caches, another mount sees
// closed data and renames after the cache timeout.
func TestCloseToOpenDefault(t *testing.T) {
	a, b := twoMounts(t)
	testCloseToOpen(t, a, b, 1500*time.Millisecond)
}

func testCloseToOpen(t *testing.T, a, b *testutil.Mount, wait time.Duration) {
	wantGone(t, b.Path("shared")) // primes b's negative entry cache
	for round, size := range []int{100, 5 << 20, 10} {
		data := randBytes(uint64(round), size)
		writeFile(t, a.Path("shared"), data, 0o644)
		time.Sleep(wait)
		wantContent(t, b.Path("shared"), data) // b saw the older version last round
		if st := stat(t, b.Path("shared")); st.Size != int64(size) {
			t.Errorf("round %d: size on the other mount %d, want %d", round, st.Size, size)
		}
	}
	// Names: create, rename and delete on b show on a.
	writeFile(t, b.Path("n1"), []byte("n"), 0o644)
	time.Sleep(wait)
	wantContent(t, a.Path("n1"), []byte("n"))
	ok(t, os.Rename(b.Path("n1"), b.Path("n2")), "rename")
	time.Sleep(wait)
	wantGone(t, a.Path("n1"))
	wantContent(t, a.Path("n2"), []byte("n"))
	ok(t, os.Remove(b.Path("n2")), "unlink")
	time.Sleep(wait)
	wantGone(t, a.Path("n2"))
}

// TestCrossMountRenameCycle races two mounts renaming a into b and b into
// a at once: the kernel's rename lock cannot serialize them, so the engine
// must refuse the second (EINVAL, or ENOENT once the first moved it) rather
// than detach both directories from the tree in a cycle.
func TestCrossMountRenameCycle(t *testing.T) {
	a, b := twoMounts(t, "--attr-timeout", "0", "--entry-timeout", "0", "--negative-timeout", "0")
	const rounds = 100
	for i := 0; i < rounds; i++ {
		ok(t, os.MkdirAll(a.Path(fmt.Sprintf("r%d", i), "x"), 0o755), "mkdir")
		ok(t, os.MkdirAll(a.Path(fmt.Sprintf("r%d", i), "y"), 0o755), "mkdir")
	}
	var wg sync.WaitGroup
	results := make([][2]error, rounds)
	for i := 0; i < rounds; i++ {
		r := fmt.Sprintf("r%d", i)
		wg.Add(2)
		go func() { defer wg.Done(); results[i][0] = os.Rename(a.Path(r, "x"), a.Path(r, "y", "x")) }()
		go func() { defer wg.Done(); results[i][1] = os.Rename(b.Path(r, "y"), b.Path(r, "x", "y")) }()
	}
	wg.Wait()
	both := 0
	outcomes := map[string]int{}
	for i := 0; i < rounds; i++ {
		r := fmt.Sprintf("r%d", i)
		if results[i][0] == nil && results[i][1] == nil {
			both++
		}
		outcomes[fmt.Sprintf("%v / %v", errnoName(results[i][0]), errnoName(results[i][1]))]++
		// Both directories must still be reachable from the root.
		found := 0
		_ = filepath.WalkDir(a.Path(r), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && (d.Name() == "x" || d.Name() == "y") {
				found++
			}
			return nil
		})
		if found != 2 {
			t.Errorf("%s: %d of x, y reachable after racing renames (%v, %v)", r, found, results[i][0], results[i][1])
		}
	}
	if both > 0 {
		t.Errorf("%d of %d rounds let both renames succeed: a directory cycle", both, rounds)
	}
	t.Logf("outcomes (mount a / mount b): %v", outcomes)
}

// errnoName names err's errno, "ok" for nil.
func errnoName(err error) string {
	var errno syscall.Errno
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &errno):
		return unix.ErrnoName(errno)
	}
	return err.Error()
}
