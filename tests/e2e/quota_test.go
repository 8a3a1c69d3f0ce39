package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shoal/internal/testutil"
)

// quotaVolume is a volume formatted with a 10 MiB capacity and 20 inodes.
func quotaVolume(t *testing.T) *testutil.Volume {
	t.Helper()
	testutil.RequireFUSE(t)
	return testutil.NewVolumeWith(t, testutil.VolumeConfig{ExtraFormatArgs: []string{"--capacity", "10M", "--inodes", "20"}})
}

// Quota bound for this volume (docs/admin.md): per other mount, two flush
// thresholds of a sixteenth of the capacity, and what it has in flight
// (at most one 4 MiB block per writer here).
const (
	quotaLimit = 10 << 20
	quotaSlack = 2*quotaLimit/16 + 4<<20
)

// writeUntilFull writes n bytes to path in 1 MiB writes, then fsyncs and
// closes, and returns the first error the application saw. With each set,
// it fsyncs after every write, so the data is committed piece by piece.
func writeUntilFull(path string, n int, each bool) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for off := 0; off < n && err == nil; off += len(buf) {
		_, err = f.Write(buf)
		if err == nil && each {
			err = f.Sync()
		}
	}
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// TestVolumeQuotaSpace: writing 30 MiB to a 10 MiB volume fails with
// ENOSPC where the application sees it, and no more than the capacity is
// stored; removing the file frees the space.
func TestVolumeQuotaSpace(t *testing.T) {
	m := quotaVolume(t).Mount(t)
	err := writeUntilFull(m.Path("big"), 30<<20, false)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing 30 MiB to a 10 MiB volume: %v, want ENOSPC", err)
	}
	if size := stat(t, m.Path("big")).Size; size > quotaLimit {
		t.Fatalf("a full volume holds a %d-byte file, capacity %d", size, quotaLimit)
	}
	var st unix.Statfs_t
	ok(t, unix.Statfs(m.Dir, &st), "statfs")
	if used := (st.Blocks - st.Bfree) * uint64(st.Bsize); used > quotaLimit {
		t.Fatalf("statfs says %d bytes used, capacity %d", used, quotaLimit)
	}
	ok(t, os.Remove(m.Path("big")), "remove")
	ok(t, writeUntilFull(m.Path("again"), 8<<20, true), "writing 8 MiB after the remove")
}

// TestVolumeQuotaInodes: creating past the inode limit fails with ENOSPC.
func TestVolumeQuotaInodes(t *testing.T) {
	m := quotaVolume(t).Mount(t)
	made := 0
	var err error
	for ; made < 40; made++ {
		var f *os.File
		if f, err = os.Create(m.Path(fmt.Sprint(made))); err != nil {
			break
		}
		ok(t, f.Close(), "close")
	}
	wantErrno(t, err, syscall.ENOSPC, "create past the inode limit")
	if made != 19 { // the root is the twentieth
		t.Fatalf("made %d files on a volume of 20 inodes", made)
	}
	wantErrno(t, os.Mkdir(m.Path("d"), 0o755), syscall.ENOSPC, "mkdir past the inode limit")
	ok(t, os.Remove(m.Path("0")), "remove")
	writeFile(t, m.Path("0"), nil, 0o644)
}

// TestVolumeQuotaTwoMounts: two mounts (two processes, two engine
// clients) writing at once stay within the capacity plus the bound.
func TestVolumeQuotaTwoMounts(t *testing.T) {
	v := quotaVolume(t)
	second := filepath.Join(v.Dir, "mnt2")
	ok(t, os.Mkdir(second, 0o755), "mkdir")
	mounts := []*testutil.Mount{v.Mount(t), v.MountAt(t, second)}
	var wg sync.WaitGroup
	errs := make([]error, len(mounts))
	for i, m := range mounts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = writeUntilFull(m.Path(fmt.Sprint(i)), 30<<20, true)
		}()
	}
	wg.Wait()
	var total int64
	for i, err := range errs {
		if !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("mount %d writing 30 MiB: %v, want ENOSPC", i, err)
		}
		total += stat(t, mounts[0].Path(fmt.Sprint(i))).Size
	}
	t.Logf("stored %d bytes of %d", total, quotaLimit)
	if total > quotaLimit+quotaSlack {
		t.Fatalf("two mounts stored %d bytes; capacity %d, bound %d", total, quotaLimit, quotaSlack)
	}
}

// TestDirQuota: `shoal quota set` on a directory of a mounted volume
// limits its tree (EDQUOT), df on the directory shows the quota, deleting
// files frees it, and moves out of the tree fail with EXDEV.
func TestDirQuota(t *testing.T) {
	testutil.RequireFUSE(t)
	v := testutil.NewVolume(t)
	m := v.Mount(t)
	ok(t, os.Mkdir(m.Path("site1"), 0o755), "mkdir")
	writeFile(t, m.Path("site1/old"), make([]byte, 1<<20), 0o644)
	out := testutil.MustRun(t, "quota", "set", v.MetaURL, "--path", "/site1", "--capacity", "4M", "--inodes", "5")
	if !strings.Contains(out.Stdout, "1.0 MiB") {
		t.Fatalf("quota set does not show the 1 MiB already used:\n%s", out.Stdout)
	}
	time.Sleep(3500 * time.Millisecond) // the mount re-reads the quota list every 3 s

	err := writeUntilFull(m.Path("site1/big"), 8<<20, true)
	if !errors.Is(err, syscall.EDQUOT) {
		t.Fatalf("writing 8 MiB into a 4 MiB quota: %v, want EDQUOT", err)
	}
	var st unix.Statfs_t
	ok(t, unix.Statfs(m.Path("site1"), &st), "statfs")
	if total := st.Blocks * uint64(st.Bsize); total != 4<<20 || st.Files != 5 {
		t.Fatalf("df in the quota tree: %d bytes, %d inodes; want the quota's 4 MiB, 5", total, st.Files)
	}
	ok(t, unix.Statfs(m.Dir, &st), "statfs")
	if st.Blocks*uint64(st.Bsize) == 4<<20 {
		t.Fatalf("df outside the quota tree shows the quota")
	}
	for i := 0; ; i++ {
		f, err := os.Create(m.Path(fmt.Sprintf("site1/f%d", i)))
		if err != nil {
			wantErrno(t, err, syscall.EDQUOT, "create past the inode quota")
			break
		}
		ok(t, f.Close(), "close")
		if i > 5 {
			t.Fatalf("created %d files in a tree of 5 inodes", i+1)
		}
	}
	wantErrno(t, os.Rename(m.Path("site1/old"), m.Path("old")), syscall.EXDEV, "rename out of the quota tree")
	ok(t, os.Remove(m.Path("site1/big")), "remove")
	ok(t, os.Remove(m.Path("site1/f0")), "remove")
	ok(t, writeUntilFull(m.Path("site1/again"), 2<<20, true), "writing 2 MiB after removes")

	out = testutil.MustRun(t, "quota", "list", v.MetaURL)
	if !strings.Contains(out.Stdout, "/site1") || !strings.Contains(out.Stdout, "3.0 MiB") {
		t.Fatalf("quota list:\n%s", out.Stdout)
	}
	testutil.MustRun(t, "quota", "delete", v.MetaURL, "--path", "/site1")
	if res := testutil.Run(t, "quota", "get", v.MetaURL, "--path", "/site1"); res.Code == 0 {
		t.Fatalf("quota get after delete succeeded:\n%s", res.Stdout)
	}
}
