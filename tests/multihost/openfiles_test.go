package multihost

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"shoal/internal/testutil"
)

// TestOpenFileOutlivesRemoval: a file open on mount a stays readable and
// writable after mount b unlinks it, or renames another file over it,
// until a closes it (then its inode goes), as on one local disk; and a
// file held open by a mount that dies is reclaimed with its session.
func TestOpenFileOutlivesRemoval(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		v := b.newVolume(t)
		ms := mountN(t, v, 2, fastSessions...)
		a, bm := ms[0], ms[1]
		unlinked := openWritten(t, a.Path("unlinked"), randBytes(1, 300<<10), "")
		replaced := openWritten(t, a.Path("replaced"), randBytes(2, 70000), bm.Path("replaced"))
		writeFile(t, a.Path("new"), []byte("the replacement"), false)
		before := waitUsedInodes(t, bm, 4, "three files and the root")

		if err := os.Remove(bm.Path("unlinked")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(bm.Path("new"), bm.Path("replaced")); err != nil {
			t.Fatal(err)
		}
		// Past a's entry and attribute timeouts: its kernel asks again.
		time.Sleep(time.Second + entrySlack)
		if _, err := eventually(entrySlack, func() error { return gone(a.Path("unlinked")) }); err != nil {
			t.Fatalf("a still sees the unlinked name: %v", err)
		}
		for _, f := range []*openFile{unlinked, replaced} {
			f.stillWorks(t)
		}
		wantContent(t, a.Path("replaced"), []byte("the replacement"))
		unlinked.close(t)
		replaced.close(t)
		waitUsedInodes(t, bm, before-2, "after the last close on a")

		// a dies holding an unlinked file open: b reclaims it with a's
		// session (3 s timeout).
		doomed := openWritten(t, a.Path("doomed"), randBytes(3, 5000), "")
		waitUsedInodes(t, bm, before-1, "with the doomed file")
		if err := os.Remove(bm.Path("doomed")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second + entrySlack)
		doomed.stillWorks(t)
		a.Kill9(t)
		_ = doomed.f.Close() // its mount is gone
		waitUsedInodes(t, bm, before-2, "after the holder's session expired")
	})
}

// openFile is a file the test holds open on a mount, with what it holds.
type openFile struct {
	f    *os.File
	data []byte
}

// openWritten creates path, writes data, fsyncs and keeps it open. With
// a creator path (the same file on another mount), the file is created
// there and opened here: an open of an existing file, not a create.
func openWritten(t *testing.T, path string, data []byte, creator string) *openFile {
	t.Helper()
	flags := os.O_CREATE | os.O_EXCL | os.O_RDWR
	if creator != "" {
		writeFile(t, creator, nil, false)
		flags = os.O_RDWR
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return &openFile{f: f, data: data}
}

// stillWorks checks fstat, pread, pwrite and fsync on the open file, with
// its page cache dropped so the reads reach the file system.
func (o *openFile) stillWorks(t *testing.T) {
	t.Helper()
	name := o.f.Name()
	st, err := o.f.Stat()
	if err != nil {
		t.Fatalf("fstat of open %s after its removal: %v", name, err)
	}
	if st.Size() != int64(len(o.data)) || st.Sys().(*syscall.Stat_t).Nlink != 0 {
		t.Fatalf("fstat of open %s: size %d nlink %d, want %d and 0", name, st.Size(), st.Sys().(*syscall.Stat_t).Nlink, len(o.data))
	}
	extra := []byte(fmt.Sprintf("appended to %s", name))
	if _, err := o.f.WriteAt(extra, int64(len(o.data))); err != nil {
		t.Fatalf("pwrite to open %s after its removal: %v", name, err)
	}
	if err := o.f.Sync(); err != nil {
		t.Fatalf("fsync of open %s after its removal: %v", name, err)
	}
	o.data = append(o.data, extra...)
	dropPageCache(t, o.f)
	got := make([]byte, len(o.data)+10)
	n, err := o.f.ReadAt(got, 0)
	if n != len(o.data) || !bytes.Equal(got[:n], o.data) {
		t.Fatalf("pread of open %s after its removal: %d bytes (%v): %s", name, n, err, diffSummary(got[:n], o.data))
	}
}

func (o *openFile) close(t *testing.T) {
	t.Helper()
	if err := o.f.Close(); err != nil {
		t.Fatalf("close %s: %v", o.f.Name(), err)
	}
}

// dropPageCache asks the kernel to forget f's cached pages.
func dropPageCache(t *testing.T, f *os.File) {
	t.Helper()
	const fadvDontNeed = 4
	if _, _, e := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvDontNeed, 0, 0); e != 0 {
		t.Fatalf("fadvise %s: %v", f.Name(), e)
	}
}

// waitUsedInodes waits up to 15 s (usage counters are flushed about once
// a second, a dead session expires after 3 s) for the volume's used
// inodes, as statfs on m shows them, to reach want.
func waitUsedInodes(t *testing.T, m *testutil.Mount, want uint64, what string) uint64 {
	t.Helper()
	var used uint64
	_, err := eventually(15*time.Second, func() error {
		var st syscall.Statfs_t
		if err := syscall.Statfs(m.Dir, &st); err != nil {
			return err
		}
		if used = st.Files - st.Ffree; used != want {
			return fmt.Errorf("%d inodes used, want %d", used, want)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return used
}
