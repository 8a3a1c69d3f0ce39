package crash

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"

	"shoal/internal/testutil"
)

// TestDumpLoadRoundTrip builds a volume with every file type and
// attribute, dumps it, loads the dump into each engine and compares the
// loaded volume, entry by entry, through a mount.
func TestDumpLoadRoundTrip(t *testing.T) {
	vol := testutil.NewVolume(t)
	m := vol.Mount(t)
	populate(t, m.Dir)
	readAll(t, m.Dir) // settle atimes before the snapshot
	want := snapshot(t, m.Dir)
	m.Unmount(t)
	for _, name := range []string{"plain.dump", "gz.dump.gz", "zst.dump.zst"} {
		testutil.MustRun(t, "dump", "--progress=never", vol.MetaURL, filepath.Join(vol.Dir, name))
	}
	targets := []struct {
		name    string
		metaURL func(t *testing.T) string
		dump    string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "loaded.db") }, "zst.dump.zst"},
		{"sqlite-gz", func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "loaded.db") }, "gz.dump.gz"},
		{"postgres", func(t *testing.T) string { return pgSchema(t, testutil.PGURL(t)) }, "plain.dump"},
		{"redis", func(t *testing.T) string { return redisNamespace(t, testutil.RedisURL(t)) }, "zst.dump.zst"},
	}
	for _, tc := range targets {
		t.Run(tc.name, func(t *testing.T) {
			metaURL := tc.metaURL(t)
			testutil.MustRun(t, "load", "--progress=never", metaURL, filepath.Join(vol.Dir, tc.dump))
			res := testutil.Run(t, "load", "--progress=never", metaURL, filepath.Join(vol.Dir, tc.dump))
			if res.Code == 0 || !strings.Contains(res.Stderr, "already holds volume") {
				t.Errorf("a second load into a formatted engine: exit %d, %s", res.Code, res.Stderr)
			}
			loaded := &testutil.Volume{Dir: vol.Dir, MetaURL: metaURL, Bucket: vol.Bucket, Mountpoint: vol.Mountpoint}
			lm := loaded.Mount(t)
			compareSnapshots(t, want, snapshot(t, lm.Dir))
			lm.Unmount(t)
			if rep, res := runFsck(t, metaURL); res.Code != 0 || len(notDrift(rep.Meta.Problems)) > 0 || len(rep.Damaged) > 0 {
				t.Errorf("fsck of the loaded volume: exit %d: %s", res.Code, res.Stdout)
			}
		})
	}
}

// populate makes one of everything under dir.
func populate(t *testing.T, dir string) {
	p := func(elem ...string) string { return filepath.Join(append([]string{dir}, elem...)...) }
	mustDo(t, os.MkdirAll(p("a", "b", "c"), 0o755))
	mustDo(t, os.WriteFile(p("a", "file"), randomFile(1, 300<<10), 0o640))
	mustDo(t, os.WriteFile(p("empty"), nil, 0o600))
	mustDo(t, os.WriteFile(p("a", "b", "big"), randomFile(2, 5<<20+123), 0o644))
	mustDo(t, os.Link(p("a", "file"), p("a", "b", "hardlink")))
	mustDo(t, os.Link(p("a", "file"), p("hardlink2")))
	mustDo(t, os.Symlink("a/file", p("symlink")))
	mustDo(t, os.Symlink("/nowhere/dangling", p("a", "dangling")))
	mustDo(t, syscall.Mkfifo(p("fifo"), 0o620))
	mustDo(t, syscall.Mknod(p("chardev"), syscall.S_IFCHR|0o600, int(unix.Mkdev(1, 3))))
	mustDo(t, syscall.Mknod(p("socket"), syscall.S_IFSOCK|0o755, 0))
	f, err := os.Create(p("sparse"))
	mustDo(t, err)
	_, err = f.WriteAt([]byte("start"), 0)
	mustDo(t, err)
	_, err = f.WriteAt([]byte("after a 70 MiB hole"), 70<<20)
	mustDo(t, err)
	mustDo(t, f.Close())
	mustDo(t, os.Chmod(p("a", "b", "c"), 0o1777))
	mustDo(t, os.Chmod(p("a", "b", "big"), 0o4755))
	mustDo(t, os.Lchown(p("a", "file"), 1234, 5678))
	mustDo(t, os.Lchown(p("symlink"), 42, 43))
	mustDo(t, unix.Lsetxattr(p("a", "file"), "user.color", []byte("blue"), 0))
	mustDo(t, unix.Lsetxattr(p("a"), "user.empty", nil, 0))
	mustDo(t, unix.Lsetxattr(p("a", "b", "big"), "user.bin", []byte{0, 1, 2, 255}, 0))
	long := strings.Repeat("n", 255)
	mustDo(t, os.WriteFile(p("a", long), []byte("long name"), 0o644))
	for i := range 300 {
		mustDo(t, os.WriteFile(p("a", "b", "c", fmt.Sprintf("many-%03d", i)), []byte(fmt.Sprint(i)), 0o644))
	}
	when := time.Date(2001, 2, 3, 4, 5, 6, 789, time.UTC)
	mustDo(t, os.Chtimes(p("a", "file"), when, when.Add(time.Hour)))
	mustDo(t, unix.UtimesNanoAt(unix.AT_FDCWD, p("symlink"), []unix.Timespec{unix.NsecToTimespec(when.UnixNano()), unix.NsecToTimespec(when.UnixNano() + 7)}, unix.AT_SYMLINK_NOFOLLOW))
}

// readAll reads every regular file once.
func readAll(t *testing.T, dir string) {
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			_, err = os.ReadFile(path)
			mustDo(t, err)
		}
		return nil
	})
}

// entry is what a snapshot records of one path.
type entry struct {
	mode, uid, gid, nlink uint32
	size                  int64
	rdev, ino             uint64
	atime, mtime, ctime   int64
	target, hash          string
	xattrs                string
}

// snapshot records every path under dir: attributes first (stat before
// reading, so reads do not move atimes), then contents.
func snapshot(t *testing.T, dir string) map[string]entry {
	out := map[string]entry{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			return err
		}
		e := entry{mode: st.Mode, uid: st.Uid, gid: st.Gid, nlink: uint32(st.Nlink), size: st.Size, rdev: st.Rdev, ino: st.Ino,
			atime: st.Atim.Nano(), mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), xattrs: xattrs(t, path)}
		if d.Type()&os.ModeSymlink != 0 {
			e.target, _ = os.Readlink(path)
		}
		out[rel] = e
		return nil
	})
	mustDo(t, err)
	for rel, e := range out {
		if e.mode&syscall.S_IFMT == syscall.S_IFREG {
			e.hash = fileHash(t, filepath.Join(dir, rel))
			out[rel] = e
		}
	}
	return out
}

func fileHash(t *testing.T, path string) string {
	f, err := os.Open(path)
	mustDo(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	mustDo(t, err)
	return fmt.Sprintf("%x", h.Sum(nil))
}

// xattrs returns path's extended attributes as sorted name=value text.
func xattrs(t *testing.T, path string) string {
	buf := make([]byte, 64<<10)
	n, err := unix.Llistxattr(path, buf)
	if err != nil {
		return "error: " + err.Error()
	}
	var parts []string
	for _, name := range strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		v := make([]byte, 64<<10)
		vn, err := unix.Lgetxattr(path, name, v)
		if err != nil {
			parts = append(parts, name+"=error: "+err.Error())
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%q", name, v[:vn]))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// compareSnapshots reports every path that differs.
func compareSnapshots(t *testing.T, want, got map[string]entry) {
	t.Helper()
	for rel, w := range want {
		g, ok := got[rel]
		switch {
		case !ok:
			t.Errorf("%s: missing after load", rel)
		case rel == ".":
			// The mountpoint root's atime moves with every readdir.
			w.atime, g.atime = 0, 0
			fallthrough
		default:
			if g != w {
				t.Errorf("%s differs after load:\n got  %+v\n want %+v", rel, g, w)
			}
		}
	}
	for rel := range got {
		if _, ok := want[rel]; !ok {
			t.Errorf("%s: appeared after load", rel)
		}
	}
	t.Logf("%d entries compared", len(want))
}

// pgSchema creates an empty schema for one test and returns base with
// search_path set to it.
func pgSchema(t *testing.T, base string) string {
	db, err := sql.Open("pgx", base)
	mustDo(t, err)
	schema := fmt.Sprintf("crash_%x", rand.Uint64())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		db.Close()
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := db.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Logf("drop schema %s: %v", schema, err)
		}
		db.Close()
	})
	return withQuery(t, base, "search_path", schema)
}

// redisNamespace returns base with a fresh key namespace, deleted at the
// end.
func redisNamespace(t *testing.T, base string) string {
	ns := fmt.Sprintf("crash_%x", rand.Uint64())
	t.Cleanup(func() {
		opts, err := redis.ParseURL(base)
		if err != nil {
			return
		}
		c := redis.NewClient(opts)
		defer c.Close()
		ctx := context.Background()
		iter := c.Scan(ctx, 0, "{"+ns+"}*", 1000).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
	})
	return withQuery(t, base, "ns", ns)
}

func withQuery(t *testing.T, raw, key, value string) string {
	u, err := url.Parse(raw)
	mustDo(t, err)
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}
