package e2e

import (
	"os"
	"syscall"
	"testing"
	"time"

	"shoal/internal/testutil"
)

// TestKill9KeepsFsyncedData kills the mount process with SIGKILL after
// fsync and close: what they returned for must be there on the next mount,
// and the volume must mount again without manual steps.
func TestKill9KeepsFsyncedData(t *testing.T) {
	m := mountFresh(t)
	synced := randBytes(81, 6<<20+5)
	f, err := os.Create(m.Path("synced"))
	ok(t, err, "create")
	_, err = f.Write(synced)
	ok(t, err, "write")
	ok(t, f.Sync(), "fsync")
	closed := randBytes(82, 3<<20)
	writeFile(t, m.Path("closed"), closed, 0o644)
	ok(t, os.Mkdir(m.Path("dir"), 0o755), "mkdir")
	ok(t, os.Rename(m.Path("closed"), m.Path("dir", "closed")), "rename")
	// An unsynced write in flight when the process dies.
	_, err = f.Write(randBytes(83, 1<<20))
	ok(t, err, "write after fsync")
	m.Kill9(t)
	f.Close() // fails with ENOTCONN; only releases the fd

	m = m.Vol.Mount(t, "--allow-other")
	got := readFile(t, m.Path("synced"))
	if len(got) < len(synced) || string(got[:len(synced)]) != string(synced) {
		t.Errorf("fsynced data after kill -9: %s", diffSummary(got[:min(len(got), len(synced))], synced))
	}
	wantContent(t, m.Path("dir", "closed"), closed)
	writeFile(t, m.Path("after"), []byte("works"), 0o644)
	wantContent(t, m.Path("after"), []byte("works"))
}

// TestUmountBusy checks that `shoal umount` refuses while a file is open,
// leaves the mount working, and succeeds after the close.
func TestUmountBusy(t *testing.T) {
	m := mountFresh(t)
	f, err := os.Create(m.Path("open"))
	ok(t, err, "create")
	res := testutil.RunTimeout(t, time.Minute, "umount", m.Dir)
	wantFail(t, res, "umount with an open file", "busy")
	if !testutil.IsMounted(m.Dir) || m.Exited() {
		t.Fatal("a refused umount ended the mount")
	}
	_, err = f.Write([]byte("still here"))
	ok(t, err, "write after refused umount")
	ok(t, f.Close(), "close")
	m = m.Remount(t)
	wantContent(t, m.Path("open"), []byte("still here"))
}

// TestSIGTERMWithOpenFile stops the mount with SIGTERM while a file is open
// with unflushed writes. The mount cannot unmount while the file is in
// use; it must flush every buffered byte at once (a second mount of the
// volume sees them), keep serving, and stop at the next signal once the
// file is closed.
func TestSIGTERMWithOpenFile(t *testing.T) {
	a, b := twoMounts(t, "--attr-timeout", "0", "--entry-timeout", "0", "--negative-timeout", "0")
	data := randBytes(84, 3<<20+11)
	f, err := os.Create(a.Path("open"))
	ok(t, err, "create")
	_, err = f.Write(data)
	ok(t, err, "write")
	a.Send(t, syscall.SIGTERM)
	exited, exitErr := a.Wait(5 * time.Second)
	if exited {
		t.Logf("mount exited at SIGTERM with a file open (%v)", exitErr)
	} else {
		wantContent(t, b.Path("open"), data) // flushed by the signal
		_, err = f.WriteAt([]byte("more"), int64(len(data)))
		ok(t, err, "write after SIGTERM (still serving)")
		data = append(data, "more"...)
	}
	f.Close()
	if !exited {
		if err := a.Signal(t, syscall.SIGTERM); err != nil {
			t.Errorf("second SIGTERM: exit %v", err)
		}
	}
	if testutil.IsMounted(a.Dir) {
		t.Error("still mounted after SIGTERM")
	}
	wantContent(t, b.Path("open"), data)
}
