package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"shoal/internal/testutil"
)

// twoMounts mounts one volume twice on this machine, as two clients of the
// same engine and store would be.
func twoMounts(t *testing.T, extra ...string) (*testutil.Mount, *testutil.Mount) {
	t.Helper()
	testutil.RequireFUSE(t)
	v := testutil.NewVolume(t)
	second := filepath.Join(v.Dir, "mnt2")
	ok(t, os.Mkdir(second, 0o755), "mkdir")
	return v.Mount(t, extra...), v.MountAt(t, second, extra...)
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
