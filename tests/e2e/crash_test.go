package e2e

import (
	"os"
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
