package crash

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"shoal/internal/testutil"
)

// TestStoreFullMidPut puts the volume's bucket on a small tmpfs, so that
// object writes fail with ENOSPC part-way through, runs the workload
// (failures allowed: the failed operations are not acknowledged), kills
// the mount, gives the store room again, and checks as after any crash.
// This is the object store dying mid-put from outside the process.
func TestStoreFullMidPut(t *testing.T) {
	testutil.RequireFUSE(t)
	rng := rand.New(rand.NewPCG(seed(t), 2))
	vol := testutil.NewUnformatted(t, "")
	mustDo(t, os.Mkdir(vol.Bucket, 0o700))
	resize(t, vol.Bucket, 0, 64<<20)
	t.Cleanup(func() {
		if err := syscall.Unmount(vol.Bucket, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting the tmpfs bucket: %v", err)
		}
	})
	testutil.MustRun(t, "format", vol.MetaURL, "--name", "full", "--storage", "file", "--bucket", vol.Bucket)
	m := vol.Mount(t)
	ws := make([]*worker, workers)
	for i := range ws {
		mustDo(t, os.Mkdir(m.Path(fmt.Sprintf("w%d", i)), 0o755))
		ws[i] = &worker{rng: rand.New(rand.NewPCG(rng.Uint64(), uint64(i))), j: newJournal(), tolerate: true}
	}
	for round := range 3 {
		// Room for a few more megabytes only.
		resize(t, vol.Bucket, syscall.MS_REMOUNT, used(t, vol.Bucket)+int64(2+rng.IntN(6))<<20)
		m = crashRound(t, vol, m, ws, time.Duration(1500+rng.IntN(1500))*time.Millisecond)
		failed := 0
		for _, w := range ws {
			failed += w.failed
			w.failed = 0
		}
		// The mount above started on the full store; give it room, then
		// remount so that nothing of the full period is cached.
		resize(t, vol.Bucket, syscall.MS_REMOUNT, 512<<20)
		m.Unmount(t)
		m = vol.Mount(t)
		for i, w := range ws {
			for _, p := range w.j.verify(m.Path(fmt.Sprintf("w%d", i))) {
				t.Errorf("round %d: %s", round, p)
			}
		}
		leaked := checkAfterCrash(t, vol.MetaURL)
		t.Logf("round %d: %d operations failed on the full store, %d leaked objects collected", round, failed, leaked)
		if t.Failed() {
			t.FailNow()
		}
	}
	m.Unmount(t)
}

// resize mounts (flags 0) or remounts (MS_REMOUNT) a tmpfs of size bytes
// at dir.
func resize(t *testing.T, dir string, flags uintptr, size int64) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", flags, "size="+strconv.FormatInt(size, 10)+",mode=0700"); err != nil {
		t.Fatalf("tmpfs at %s (size %d): %v", dir, size, err)
	}
}

// used returns the bytes in use on dir's file system.
func used(t *testing.T, dir string) int64 {
	var st syscall.Statfs_t
	mustDo(t, syscall.Statfs(dir, &st))
	return int64(st.Blocks-st.Bfree) * st.Bsize
}
