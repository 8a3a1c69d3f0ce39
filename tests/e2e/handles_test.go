package e2e

import (
	"bytes"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestTruncateUnderDirtyHandle truncates a file through one handle while
// another holds written-but-unflushed data: the data written before the
// truncate must not come back when the other handle flushes.
func TestTruncateUnderDirtyHandle(t *testing.T) {
	m := mountFresh(t)
	p := m.Path("f")
	a, err := os.Create(p)
	ok(t, err, "create")
	_, err = a.Write(randBytes(1, 1<<20))
	ok(t, err, "write (buffered)")
	ok(t, os.Truncate(p, 0), "truncate by path")
	_, err = a.WriteAt([]byte("tail"), 2<<20)
	ok(t, err, "write after truncate")
	ok(t, a.Close(), "close")
	want := make([]byte, 2<<20+4)
	copy(want[2<<20:], "tail")
	wantContent(t, p, want)
	dropCache(t, p)
	wantContent(t, p, want)
	m = m.Remount(t)
	wantContent(t, m.Path("f"), want)
}

// TestReadOtherHandleUnflushed reads, through a second handle with the page
// cache dropped, what a first handle wrote and has not flushed.
func TestReadOtherHandleUnflushed(t *testing.T) {
	m := mountFresh(t)
	p := m.Path("f")
	base := randBytes(2, 3<<20)
	writeFile(t, p, base, 0o644)
	a, err := os.OpenFile(p, os.O_RDWR, 0)
	ok(t, err, "open a")
	defer a.Close()
	patch := randBytes(3, 100<<10)
	_, err = a.WriteAt(patch, 1<<20)
	ok(t, err, "write through a")
	copy(base[1<<20:], patch)
	b, err := os.Open(p)
	ok(t, err, "open b")
	defer b.Close()
	ok(t, unix.Fadvise(int(b.Fd()), 0, 0, unix.FADV_DONTNEED), "fadvise")
	got := make([]byte, len(base))
	_, err = b.ReadAt(got, 0)
	ok(t, err, "read through b")
	if !bytes.Equal(got, base) {
		t.Errorf("other handle: %s", diffSummary(got, base))
	}
}

// TestUnlinkDirtyThenClose unlinks a file whose handle holds unflushed data,
// then closes it: nothing may come back under the name, and a new file of
// the same name starts empty.
func TestUnlinkDirtyThenClose(t *testing.T) {
	m := mountFresh(t)
	p := m.Path("f")
	f, err := os.Create(p)
	ok(t, err, "create")
	_, err = f.Write(randBytes(4, 2<<20))
	ok(t, err, "write")
	ok(t, os.Remove(p), "unlink")
	ok(t, f.Close(), "close")
	wantGone(t, p)
	writeFile(t, p, []byte("new"), 0o644)
	m = m.Remount(t)
	wantContent(t, m.Path("f"), []byte("new"))
}

// TestUtimesBeforeClose sets the times while written data is still
// buffered, as `cp -p`, tar and rsync do (write, futimens, close): the
// flush at close must not move mtime back to "now".
func TestUtimesBeforeClose(t *testing.T) {
	m := mountFresh(t)
	p := m.Path("f")
	f, err := os.Create(p)
	ok(t, err, "create")
	_, err = f.Write(randBytes(5, 3<<20+7))
	ok(t, err, "write")
	ts := []unix.Timespec{{Sec: 1000000000, Nsec: 123}, {Sec: 1200000000, Nsec: 456}}
	ok(t, unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, 0), "utimensat before close")
	ok(t, f.Close(), "close")
	check := func(when, p string) {
		t.Helper()
		if st := stat(t, p); st.Mtim != ts[1] || st.Atim != ts[0] {
			t.Errorf("%s: atime %v mtime %v, want %v %v", when, st.Atim, st.Mtim, ts[0], ts[1])
		}
	}
	check("after close", p)
	m = m.Remount(t)
	check("after remount", m.Path("f"))
}
