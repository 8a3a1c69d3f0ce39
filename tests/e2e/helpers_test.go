package e2e

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shoal/internal/testutil"
)

// mountFresh formats a new embedded volume and mounts it with allow_other,
// so helpers running as another user can enter it.
func mountFresh(t *testing.T, extra ...string) *testutil.Mount {
	t.Helper()
	testutil.RequireFUSE(t)
	v := testutil.NewVolume(t)
	return v.Mount(t, append([]string{"--allow-other"}, extra...)...)
}

// wantErrno fails t unless err is the errno want.
func wantErrno(t *testing.T, err error, want syscall.Errno, what string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: got %v, want %s (%v)", what, err, unix.ErrnoName(want), want)
	}
}

// ok fails t immediately on err.
func ok(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// lstat returns unix.Stat_t for path without following a symlink.
func lstat(t *testing.T, path string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	ok(t, unix.Lstat(path, &st), "lstat "+path)
	return st
}

// stat returns unix.Stat_t for path.
func stat(t *testing.T, path string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	ok(t, unix.Stat(path, &st), "stat "+path)
	return st
}

// fstat returns unix.Stat_t for an open file.
func fstat(t *testing.T, f *os.File) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	ok(t, unix.Fstat(int(f.Fd()), &st), "fstat "+f.Name())
	return st
}

func mtime(st unix.Stat_t) time.Time { return time.Unix(st.Mtim.Unix()) }
func ctime(st unix.Stat_t) time.Time { return time.Unix(st.Ctim.Unix()) }
func atime(st unix.Stat_t) time.Time { return time.Unix(st.Atim.Unix()) }

// writeFile creates path with data and mode, failing t on error.
func writeFile(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	ok(t, os.WriteFile(path, data, mode), "write "+path)
}

// readFile returns path's content, failing t on error.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	ok(t, err, "read "+path)
	return b
}

// wantContent fails t unless path holds exactly want.
func wantContent(t *testing.T, path string, want []byte) {
	t.Helper()
	got := readFile(t, path)
	if !bytes.Equal(got, want) {
		t.Errorf("%s: content differs: %s", path, diffSummary(got, want))
	}
}

// diffSummary describes where two byte slices first differ.
func diffSummary(got, want []byte) string {
	if len(got) != len(want) {
		return fmt.Sprintf("length %d, want %d (first difference at %d)", len(got), len(want), firstDiff(got, want))
	}
	i := firstDiff(got, want)
	end := min(i+16, len(got))
	return fmt.Sprintf("first difference at offset %d: got %x want %x", i, got[i:end], want[i:end])
}

func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// randBytes returns n pseudo-random bytes from seed.
func randBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

func sum(b []byte) [32]byte { return sha256.Sum256(b) }

// dropCache asks the kernel to forget path's cached pages, so the next read
// goes to the mount process (fsync first so nothing dirty is kept).
func dropCache(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	ok(t, err, "open for fadvise")
	defer f.Close()
	ok(t, unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED), "fadvise DONTNEED")
}

// tick sleeps long enough for nanosecond timestamps to move visibly.
func tick() { time.Sleep(20 * time.Millisecond) }
