package backup

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shoal/internal/testutil"
	"shoal/tests/isolate"
)

// engines are the metadata engines a volume is backed up from, each with
// the engine kind its backup is restored into.
var engines = []struct {
	name     string
	src, dst func(t *testing.T) string
}{
	{"sqlite", func(t *testing.T) string { return "" }, func(t *testing.T) string { return isolate.PGSchemaURL(t, testutil.PGURL(t)) }},
	{"postgres", func(t *testing.T) string { return isolate.PGSchemaURL(t, testutil.PGURL(t)) }, func(t *testing.T) string { return isolate.RedisNamespaceURL(t, testutil.RedisURL(t)) }},
	{"redis", func(t *testing.T) string { return isolate.RedisNamespaceURL(t, testutil.RedisURL(t)) }, func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "r.db") }},
}

// TestBackupRestore backs a volume up while a writer updates files, then
// incrementally, verifies the backup (and catches a missing and a
// corrupted block), restores it into another engine kind and compares it
// with the snapshot it was taken from.
func TestBackupRestore(t *testing.T) {
	testutil.RequireFUSE(t)
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			vol := testutil.NewVolumeWith(t, testutil.VolumeConfig{MetaURL: e.src(t)})
			m := vol.Mount(t)
			populate(t, m.Dir)
			testutil.MustRun(t, "quota", "set", vol.MetaURL, "--path", "/dir", "--capacity", "1G", "--inodes", "1000")
			dest := filepath.Join(vol.Dir, "dest")

			// Full backups while a writer updates files in a known order:
			// one from a snapshot (kept), one of the live tree.
			w := startWriter(t, m.Dir)
			res := testutil.MustRun(t, "backup", "--progress=never", "--keep-snapshot", "--name", "first", vol.MetaURL, dest)
			t.Log(strings.TrimSpace(res.Stdout))
			w.atFirst = w.done.Load()
			for w.done.Load() < w.atFirst+10 && !w.quit.Load() {
				time.Sleep(5 * time.Millisecond)
			}
			testutil.MustRun(t, "backup", "--progress=never", "--name", "live", vol.MetaURL, dest)
			w.stop(t)
			snapDir := m.Path(".snapshots", "first")
			checkPrefix(t, snapDir, w)
			want := tree(t, snapDir)

			// Incremental: only the blocks of changed files are copied.
			testutil.MustRun(t, "backup", "--progress=never", "--name", "second", vol.MetaURL, dest)
			before := blockFiles(t, dest)
			for i := range 3 {
				must(t, os.WriteFile(m.Path("dir", fmt.Sprintf("small-%d", i)), []byte(fmt.Sprintf("changed %d", i)), 0o644))
			}
			res = testutil.MustRun(t, "backup", "--progress=never", "--name", "third", vol.MetaURL, dest)
			after := blockFiles(t, dest)
			var added []string
			for k, mt := range after {
				if old, ok := before[k]; !ok {
					added = append(added, k)
				} else if !old.Equal(mt) {
					t.Errorf("block %s was copied again", k)
				}
			}
			if len(added) != 3 || !strings.Contains(res.Stdout, "(3 copied") {
				t.Errorf("incremental backup after changing 3 files added %d blocks (%v): %s", len(added), added, res.Stdout)
			}
			if list := testutil.MustRun(t, "backup", "list", dest).Stdout; !strings.Contains(list, "first") || !strings.Contains(list, "third") {
				t.Errorf("backup list: %s", list)
			}

			checkVerify(t, dest, added[0], "first")

			// Restore into another engine kind and a new bucket.
			rv := testutil.NewUnformatted(t, e.dst(t))
			rv.Bucket = filepath.Join(rv.Dir, "restored")
			res = testutil.Run(t, "restore", "--progress=never", dest+":first", rv.MetaURL, "--bucket", dest)
			if res.Code != 2 {
				t.Errorf("restore into the backup's own directory: exit %d, %s", res.Code, res.Stderr)
			}
			testutil.MustRun(t, "restore", "--progress=never", dest+":first", rv.MetaURL, "--bucket", rv.Bucket)
			checkQuota(t, rv.MetaURL, vol.MetaURL)
			rm := rv.Mount(t)
			compareTrees(t, want, tree(t, rm.Dir))
			must(t, os.WriteFile(rm.Path("new-after-restore"), []byte("writable"), 0o644))
			rm.Unmount(t)
			if res := testutil.Run(t, "fsck", "--progress=never", rv.MetaURL); res.Code != 0 {
				t.Errorf("fsck of the restored volume: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
			}
			// The live backup: the same tree, and a prefix of the writes.
			lv := testutil.NewUnformatted(t, e.dst(t))
			lv.Bucket = filepath.Join(lv.Dir, "restored")
			testutil.MustRun(t, "restore", "--progress=never", dest+":live", lv.MetaURL, "--bucket", lv.Bucket)
			checkQuota(t, lv.MetaURL, vol.MetaURL)
			lm := lv.Mount(t)
			checkPrefix(t, lm.Dir, w)
			compareTrees(t, withoutWriter(want), withoutWriter(tree(t, lm.Dir)))
			lm.Unmount(t)
			if res := testutil.Run(t, "fsck", "--progress=never", lv.MetaURL); res.Code != 0 {
				t.Errorf("fsck of the restored live backup: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
			}
			if res := testutil.Run(t, "restore", "--progress=never", dest+":nosuch", "sqlite://"+filepath.Join(t.TempDir(), "x.db")); res.Code != 4 {
				t.Errorf("restore of a missing backup: exit %d, %s", res.Code, res.Stderr)
			}
		})
	}
}

// checkQuota checks that the restored volume has the source's quota on
// /dir: the same limits, and usage recounted over the restored tree (the
// inodes as in the source, whose files under /dir changed size since but
// not number; some space).
func checkQuota(t *testing.T, restored, source string) {
	t.Helper()
	got := testutil.MustRun(t, "quota", "get", restored, "--path", "/dir").Stdout
	if !strings.Contains(got, "/dir") || !strings.Contains(got, "1000") || !strings.Contains(got, "1.0 GiB") {
		t.Errorf("quota of /dir after restore:\n%s", got)
	}
	src := testutil.MustRun(t, "quota", "get", source, "--path", "/dir").Stdout
	if inodes(got) != inodes(src) || strings.Contains(got, " 0 B ") {
		t.Errorf("quota usage after restore:\n%s\nsource:\n%s", got, src)
	}
}

// inodes is the INODES column of a quota line (USED and CAPACITY are
// two words each: "1.2 MiB").
func inodes(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	f := strings.Fields(lines[len(lines)-1])
	if len(f) < 7 {
		return out
	}
	return f[5]
}

// populate writes a small tree of every common kind, with files of
// several blocks.
func populate(t *testing.T, dir string) {
	must(t, os.MkdirAll(filepath.Join(dir, "dir", "sub"), 0o755))
	for i := range 5 {
		must(t, os.WriteFile(filepath.Join(dir, "dir", fmt.Sprintf("small-%d", i)), []byte(fmt.Sprintf("small %d", i)), 0o644))
	}
	big := make([]byte, 9<<20+123)
	for i := range big {
		big[i] = byte(i * 7 / 5)
	}
	must(t, os.WriteFile(filepath.Join(dir, "dir", "sub", "big"), big, 0o600))
	must(t, os.Link(filepath.Join(dir, "dir", "small-0"), filepath.Join(dir, "hardlink")))
	must(t, os.Symlink("dir/small-1", filepath.Join(dir, "symlink")))
	must(t, unix.Lsetxattr(filepath.Join(dir, "dir"), "user.k", []byte("v"), 0))
	must(t, os.MkdirAll(filepath.Join(dir, "w"), 0o755))
	for k := range writerFiles {
		must(t, os.WriteFile(filepath.Join(dir, "w", fmt.Sprint(k)), make([]byte, 8), 0o644))
	}
}

// writerFiles is how many files the writer cycles through.
const writerFiles = 10

// writer overwrites file w/(i mod writerFiles) with generation i, in
// order, each write synced before the next.
type writer struct {
	dir  string
	quit atomic.Bool
	wg   sync.WaitGroup
	done atomic.Int64 // writes completed
	err  error
	// atFirst is how many writes were done when the first backup ended.
	atFirst int64
}

func startWriter(t *testing.T, dir string) *writer {
	w := &writer{dir: dir}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer w.quit.Store(true)
		for i := int64(1); !w.quit.Load(); i++ {
			if w.err = w.write(i); w.err != nil {
				return
			}
			w.done.Store(i)
		}
	}()
	for w.done.Load() < 20 && !w.quit.Load() { // a few writes before the backup starts
		time.Sleep(5 * time.Millisecond)
	}
	return w
}

func (w *writer) write(i int64) error {
	f, err := os.OpenFile(filepath.Join(w.dir, "w", fmt.Sprint(i%writerFiles)), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(i))
	_, err = f.WriteAt(b[:], 0)
	if err == nil {
		err = f.Sync()
	}
	return errorsJoin(err, f.Close())
}

func errorsJoin(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func (w *writer) stop(t *testing.T) {
	w.quit.Store(true)
	w.wg.Wait()
	must(t, w.err)
	t.Logf("the writer made %d writes", w.done.Load())
}

// checkPrefix checks that the writer's files in dir show a prefix of its
// writes: some n such that each file holds the last of writes 1..n made
// to it.
func checkPrefix(t *testing.T, dir string, w *writer) {
	gens := make([]int64, writerFiles)
	var n int64
	for k := range writerFiles {
		b, err := os.ReadFile(filepath.Join(dir, "w", fmt.Sprint(k)))
		must(t, err)
		gens[k] = int64(binary.LittleEndian.Uint64(b))
		n = max(n, gens[k])
	}
	if n == 0 {
		t.Fatalf("the snapshot holds none of the writer's writes")
	}
	for k, g := range gens {
		// The last write to file k among 1..n.
		last := n - ((n-int64(k))%writerFiles+writerFiles)%writerFiles
		if last <= 0 {
			last = 0
		}
		if g != last {
			t.Errorf("not a prefix of the writes: after write %d, file %d holds write %d, want %d (all: %v)", n, k, g, last, gens)
		}
	}
	t.Logf("the backup holds the first %d of %d writes", n, w.done.Load())
}

// checkVerify runs backup verify on a whole backup, then with block key
// missing, then with it corrupted (both exit 3), and leaves it whole.
func checkVerify(t *testing.T, dest, key, name string) {
	res := testutil.Run(t, "backup", "verify", "--progress=never", dest)
	if res.Code != 0 || !strings.Contains(res.Stdout, "0 missing, 0 corrupt") {
		t.Errorf("verify of a whole backup: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	path := filepath.Join(dest, key)
	good, err := os.ReadFile(path)
	must(t, err)
	must(t, os.Remove(path))
	res = testutil.Run(t, "backup", "verify", "--progress=never", dest)
	if res.Code != 3 || !strings.Contains(res.Stdout, "MISSING     "+key) {
		t.Errorf("verify with block %s deleted: exit %d\n%s%s", key, res.Code, res.Stdout, res.Stderr)
	}
	bad := bytes.Clone(good)
	bad[len(bad)/2] ^= 0x55
	must(t, os.WriteFile(path, bad, 0o644))
	res = testutil.Run(t, "backup", "verify", "--progress=never", dest)
	if res.Code != 3 || !strings.Contains(res.Stdout, "CORRUPT     "+key) {
		t.Errorf("verify with block %s corrupted: exit %d\n%s%s", key, res.Code, res.Stdout, res.Stderr)
	}
	must(t, os.WriteFile(path, good, 0o644))
	if res := testutil.Run(t, "backup", "verify", "--progress=never", dest, name); res.Code != 0 {
		t.Errorf("verify of backup %s: exit %d\n%s%s", name, res.Code, res.Stdout, res.Stderr)
	}
	if res := testutil.Run(t, "backup", "verify", dest, "nosuch"); res.Code != 4 {
		t.Errorf("verify of a missing backup: exit %d, %s", res.Code, res.Stderr)
	}
}
