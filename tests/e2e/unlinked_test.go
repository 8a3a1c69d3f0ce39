package e2e

import (
	"bytes"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestUnlinkedOpen checks that an unlinked file stays readable and writable
// through its open handles until the last one closes.
func TestUnlinkedOpen(t *testing.T) {
	m := mountFresh(t)
	p := m.Path("doomed")
	data := randBytes(5, 3<<20)
	writeFile(t, p, data, 0o644)
	rw, err := os.OpenFile(p, os.O_RDWR, 0)
	ok(t, err, "open rw")
	ro, err := os.Open(p)
	ok(t, err, "open ro")
	ok(t, os.Remove(p), "unlink")
	wantGone(t, p)
	if st := fstat(t, rw); st.Nlink != 0 || st.Size != int64(len(data)) {
		t.Errorf("unlinked file: nlink %d size %d", st.Nlink, st.Size)
	}
	// Write more through one handle, read it through both.
	extra := randBytes(6, 1<<20)
	_, err = rw.WriteAt(extra, int64(len(data)))
	ok(t, err, "write to unlinked")
	ok(t, rw.Sync(), "fsync unlinked")
	want := append(append([]byte{}, data...), extra...)
	for name, f := range map[string]*os.File{"rw": rw, "ro": ro} {
		got := make([]byte, len(want))
		n, err := f.ReadAt(got, 0)
		if err != nil || n != len(want) || !bytes.Equal(got, want) {
			t.Errorf("read unlinked via %s: n=%d err=%v %s", name, n, err, diffSummary(got[:n], want))
		}
	}
	ok(t, rw.Truncate(10), "ftruncate unlinked")
	ok(t, rw.Close(), "close rw")
	got := make([]byte, 100)
	n, _ := ro.ReadAt(got, 0)
	if n != 10 || !bytes.Equal(got[:n], data[:10]) {
		t.Errorf("read after truncate through other handle: %d bytes", n)
	}
	ok(t, ro.Close(), "close ro (last)")
	// A new file under the same name is a new, empty file.
	writeFile(t, p, nil, 0o644)
	wantContent(t, p, nil)
	if ents, _ := os.ReadDir(m.Dir); len(ents) != 1 {
		t.Errorf("root lists %d entries, want 1", len(ents))
	}
}

// TestUnlinkedSpaceReleased checks that data of an unlinked file is
// released: after the last close and a remount the volume's usage drops.
func TestUnlinkedSpaceReleased(t *testing.T) {
	m := mountFresh(t)
	p := m.Path("big")
	writeFile(t, p, randBytes(9, 8<<20), 0o644)
	var before unix.Statfs_t
	ok(t, unix.Statfs(m.Dir, &before), "statfs")
	f, err := os.Open(p)
	ok(t, err, "open")
	ok(t, os.Remove(p), "unlink")
	ok(t, f.Close(), "close")
	m = m.Remount(t)
	var after unix.Statfs_t
	ok(t, unix.Statfs(m.Dir, &after), "statfs")
	if after.Bfree <= before.Bfree && after.Ffree <= before.Ffree {
		t.Errorf("statfs after deleting an 8 MiB file: free blocks %d -> %d, free inodes %d -> %d",
			before.Bfree, after.Bfree, before.Ffree, after.Ffree)
	}
}
