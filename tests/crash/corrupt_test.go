package crash

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"shoal/internal/backup"
	"shoal/internal/fsck"
	"shoal/internal/object/objopen"
	"shoal/internal/testutil"
	"shoal/internal/volume"
)

// randomFile returns n random bytes from seed.
func randomFile(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 3))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// writeNew writes name on m and returns the object files it added to the
// bucket.
func writeNew(t *testing.T, m *testutil.Mount, name string, data []byte) []string {
	t.Helper()
	before := m.Vol.ObjectFiles(t)
	if err := os.WriteFile(m.Path(name), data, 0o644); err != nil {
		t.Fatal(err)
	}
	var added []string
	for _, k := range m.Vol.ObjectFiles(t) {
		if !slices.Contains(before, k) {
			added = append(added, k)
		}
	}
	if len(added) == 0 {
		t.Fatalf("writing %s stored no object", name)
	}
	slices.Sort(added)
	return added
}

// TestCorruptBlocks flips a bit in one block, truncates another and
// deletes a third: each read fails with EIO and a log line naming the
// inode, offset and object; fsck names each block and file; the rest of
// the volume reads fine; --repair --zero-damaged leaves it clean.
func TestCorruptBlocks(t *testing.T) {
	vol := testutil.NewVolume(t)
	m := vol.Mount(t)
	const size = 5 << 20 // block 0 at 0 (4 MiB), block 1 at 4 MiB
	files := map[string][]byte{}
	keys := map[string]string{}
	for i, name := range []string{"flip", "cut", "gone", "fine"} {
		files[name] = randomFile(uint64(i), size)
		added := writeNew(t, m, name, files[name])
		keys[name] = added[len(added)-1] // the 1 MiB block at offset 4 MiB sorts last? check below
		for _, k := range added {
			if strings.HasSuffix(k, "_1_"+strconv.Itoa(1<<20)) {
				keys[name] = k
			}
		}
	}
	inos := map[string]uint64{}
	for name := range files {
		fi, err := os.Stat(m.Path(name))
		if err != nil {
			t.Fatal(err)
		}
		inos[name] = fi.Sys().(*syscall.Stat_t).Ino
	}
	m.Unmount(t)

	obj := func(name string) string { return filepath.Join(vol.Bucket, keys[name]) }
	b, err := os.ReadFile(obj("flip"))
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x04
	mustDo(t, os.WriteFile(obj("flip"), b, 0o600))
	mustDo(t, os.Truncate(obj("cut"), 4096))
	mustDo(t, os.Remove(obj("gone")))

	rep, res := runFsck(t, vol.MetaURL)
	if res.Code != 3 {
		t.Errorf("fsck of a damaged volume: exit %d, want 3\n%s", res.Code, res.Stderr)
	}
	wantKinds := map[string]string{keys["flip"]: fsck.Corrupt, keys["cut"]: fsck.WrongSize, keys["gone"]: fsck.Missing}
	for _, d := range rep.Damaged {
		if wantKinds[d.Key] != d.Kind {
			t.Errorf("fsck: block %s %s, want %q", d.Key, d.Kind, wantKinds[d.Key])
		}
		delete(wantKinds, d.Key)
	}
	for k, kind := range wantKinds {
		t.Errorf("fsck did not find the %s block %s", kind, k)
	}
	if len(rep.Files) != 3 {
		t.Errorf("fsck names %d damaged files, want 3: %+v", len(rep.Files), rep.Files)
	}

	m = vol.Mount(t)
	for _, name := range []string{"flip", "cut", "gone"} {
		_, err := os.ReadFile(m.Path(name))
		if !errors.Is(err, syscall.EIO) {
			t.Errorf("read %s: %v, want EIO", name, err)
		}
		head := make([]byte, 1<<20)
		f, err := os.Open(m.Path(name))
		mustDo(t, err)
		_, err = f.ReadAt(head, 0)
		f.Close()
		if err != nil || !bytes.Equal(head, files[name][:1<<20]) {
			t.Errorf("%s: the intact first block does not read back: %v", name, err)
		}
		if !logNames(m.LogText(), strconv.FormatUint(inos[name], 10), strconv.Itoa(4<<20), filepath.Base(keys[name])) {
			t.Errorf("no log line names inode %d, offset %d and object %s:\n%s", inos[name], 4<<20, keys[name], m.LogText())
		}
	}
	got, err := os.ReadFile(m.Path("fine"))
	if err != nil || !bytes.Equal(got, files["fine"]) {
		t.Errorf("undamaged file: %v", err)
	}
	m.Unmount(t)

	rep, res = runFsck(t, vol.MetaURL, "--repair", "--zero-damaged")
	if res.Code != 0 || len(rep.Repairs) != 3 {
		t.Errorf("fsck --repair --zero-damaged: exit %d, repairs %v\n%s", res.Code, rep.Repairs, res.Stderr)
	}
	if rep, res := runFsck(t, vol.MetaURL); res.Code != 0 || rep.Damage() || len(rep.Files) != 0 {
		t.Errorf("fsck after repair: exit %d: %s", res.Code, res.Stdout)
	}
}

// logNames reports whether one line of log holds all of subs.
func logNames(log string, subs ...string) bool {
	for _, line := range strings.Split(log, "\n") {
		if contains(line, subs...) {
			return true
		}
	}
	return false
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestTruncatedDatabase truncates the SQLite file: fsck and mount fail
// with a message that says the database is corrupt, and the volume comes
// back from an automatic backup with shoal load, both from the backup's
// plain file in the bucket and fetched as the store's latest backup.
func TestTruncatedDatabase(t *testing.T) {
	vol := testutil.NewVolume(t)
	m := vol.Mount(t)
	data := randomFile(9, 100<<10)
	for i := range 50 {
		mustDo(t, os.WriteFile(m.Path("f"+strconv.Itoa(i)), data, 0o644))
	}
	m.Unmount(t)
	dbFile := strings.TrimPrefix(vol.MetaURL, "sqlite://")
	key := takeBackup(t, vol)
	fi, err := os.Stat(dbFile)
	mustDo(t, err)
	mustDo(t, os.Truncate(dbFile, fi.Size()/2))

	res := testutil.Run(t, "fsck", "--progress=never", vol.MetaURL)
	if res.Code == 0 || !contains(res.Stderr, "database is corrupt", "shoal load") {
		t.Errorf("fsck of a truncated database: exit %d\n%s", res.Code, res.Stderr)
	}
	res = testutil.RunTimeout(t, time.Minute, "mount", vol.MetaURL, vol.Mountpoint)
	if res.Code == 0 || !(strings.Contains(res.Stderr, "malformed") || strings.Contains(res.Stderr, "corrupt")) {
		t.Errorf("mount of a truncated database: exit %d\n%s", res.Code, res.Stderr)
	}

	// The backup object is a plain file in the bucket: load reads it
	// directly, or fetches the newest from the store.
	plain := "sqlite://" + filepath.Join(vol.Dir, "plain.db")
	testutil.MustRun(t, "load", "--progress=never", plain, filepath.Join(vol.Bucket, key))
	restored := "sqlite://" + filepath.Join(vol.Dir, "restored.db")
	testutil.MustRun(t, "load", "--progress=never", "--bucket", vol.Bucket, restored, "latest")
	rv := &testutil.Volume{Dir: vol.Dir, MetaURL: restored, Bucket: vol.Bucket, Mountpoint: vol.Mountpoint}
	m = rv.Mount(t)
	for i := range 50 {
		got, err := os.ReadFile(m.Path("f" + strconv.Itoa(i)))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("restored f%d: %v", i, err)
		}
	}
	m.Unmount(t)
	if rep, res := runFsck(t, restored); res.Code != 0 || len(rep.Damaged) > 0 {
		t.Errorf("fsck of the restored volume: exit %d: %s", res.Code, res.Stdout)
	}
}

// takeBackup stores one automatic backup of vol, as a mount would, and
// returns its key.
func takeBackup(t *testing.T, vol *testutil.Volume) string {
	t.Helper()
	ctx := context.Background()
	eng, f, err := volume.Load(ctx, vol.MetaURL)
	mustDo(t, err)
	defer eng.Close()
	store, err := objopen.Open(ctx, f.Storage, f.Bucket)
	mustDo(t, err)
	key, err := backup.Once(ctx, eng, store)
	mustDo(t, err)
	return key
}
