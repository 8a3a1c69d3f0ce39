package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shoal/internal/testutil"
)

// A mount answers the kernel's GETATTR of a directory it just changed
// from the attributes its change committed (fusefs/dirattrs.go). These
// tests check those answers against the engine's, as a mount without
// caches (--strict) reads them, and against another mount's changes.

// cachedAndStrict mounts one volume with the default caches and again
// with none.
func cachedAndStrict(t *testing.T) (cached, strict *testutil.Mount) {
	t.Helper()
	testutil.RequireFUSE(t)
	v := testutil.NewVolume(t)
	second := filepath.Join(v.Dir, "strict")
	ok(t, os.Mkdir(second, 0o755), "mkdir")
	return v.Mount(t), v.MountAt(t, second, "--strict")
}

// sameAttrs fails unless path has the same attributes on both mounts.
func sameAttrs(t *testing.T, what string, cached, strict *testutil.Mount, rel ...string) {
	t.Helper()
	got, want := lstat(t, cached.Path(rel...)), lstat(t, strict.Path(rel...))
	type attrs struct {
		Mode         uint32
		Nlink        uint64
		Uid, Gid     uint32
		Size         int64
		Mtime, Ctime unix.Timespec
	}
	g := attrs{got.Mode, got.Nlink, got.Uid, got.Gid, got.Size, got.Mtim, got.Ctim}
	w := attrs{want.Mode, want.Nlink, want.Uid, want.Gid, want.Size, want.Mtim, want.Ctim}
	if g != w {
		t.Errorf("%s: %s on the changing mount %+v, in the engine %+v", what, filepath.Join(rel...), g, w)
	}
}

func create(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	ok(t, err, "create")
	ok(t, f.Close(), "close")
}

// TestDirAttrsAfterOwnChanges: after each kind of change of a directory,
// the changing mount shows the directory's attributes as the engine has
// them: link counts, times and mode, the moved directory of a rename
// (its ctime) and a directory whose xattrs changed included.
func TestDirAttrsAfterOwnChanges(t *testing.T) {
	c, s := cachedAndStrict(t)
	ok(t, os.Mkdir(c.Path("d"), 0o755), "mkdir d")
	ok(t, os.Mkdir(c.Path("e"), 0o755), "mkdir e")
	steps := []struct {
		what  string
		do    func() error
		check [][]string
	}{
		{"create", func() error { create(t, c.Path("d", "f1")); return nil }, [][]string{{"d"}}},
		{"mkdir", func() error { return os.Mkdir(c.Path("d", "s"), 0o755) }, [][]string{{"d"}}},
		{"create in the subdirectory", func() error { create(t, c.Path("d", "s", "in")); return nil }, [][]string{{"d", "s"}}},
		{"rename the subdirectory", func() error { return os.Rename(c.Path("d", "s"), c.Path("e", "s")) },
			[][]string{{"d"}, {"e"}, {"e", "s"}}},
		{"setxattr", func() error { return unix.Setxattr(c.Path("d"), "user.k", []byte("v"), 0) }, [][]string{{"d"}}},
		{"create after setxattr", func() error { create(t, c.Path("d", "f2")); return nil }, [][]string{{"d"}}},
		{"removexattr", func() error { return unix.Removexattr(c.Path("d"), "user.k") }, [][]string{{"d"}}},
		{"chmod", func() error { return os.Chmod(c.Path("d"), 0o750) }, [][]string{{"d"}}},
		{"link", func() error { return os.Link(c.Path("d", "f2"), c.Path("e", "l")) }, [][]string{{"e"}, {"e", "l"}}},
		{"symlink", func() error { return os.Symlink("f1", c.Path("d", "sl")) }, [][]string{{"d"}}},
		{"mknod", func() error { return unix.Mkfifo(c.Path("d", "p"), 0o644) }, [][]string{{"d"}}},
		{"rename a file over another", func() error { return os.Rename(c.Path("d", "f1"), c.Path("e", "l")) },
			[][]string{{"d"}, {"e"}, {"d", "f2"}}},
		{"unlink", func() error { return os.Remove(c.Path("d", "f2")) }, [][]string{{"d"}}},
		{"unlink in the moved directory", func() error { return os.Remove(c.Path("e", "s", "in")) }, [][]string{{"e", "s"}}},
		{"rmdir", func() error { return os.Remove(c.Path("e", "s")) }, [][]string{{"e"}}},
	}
	for _, st := range steps {
		ok(t, st.do(), st.what)
		for _, p := range st.check {
			sameAttrs(t, st.what, c, s, p...)
		}
	}
}

// TestDirAttrsConcurrentChanges: after many changes of two directories at
// once (creates, mkdirs, unlinks, rmdirs and renames between them), the
// changing mount shows each directory's attributes as the engine has
// them, not those of a change that committed earlier but answered later.
func TestDirAttrsConcurrentChanges(t *testing.T) {
	c, s := cachedAndStrict(t)
	ok(t, os.Mkdir(c.Path("d"), 0o755), "mkdir d")
	ok(t, os.Mkdir(c.Path("e"), 0o755), "mkdir e")
	for round := 0; round < 5; round++ {
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for w := 0; w < 6; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 10; i++ {
					name := fmt.Sprintf("r%dw%di%d", round, w, i)
					var err error
					switch (w + i) % 4 {
					case 0:
						err = os.Mkdir(c.Path("d", name), 0o755)
					case 1:
						var f *os.File
						if f, err = os.Create(c.Path("e", name)); err == nil {
							err = f.Close()
						}
					case 2:
						if err = os.Mkdir(c.Path("d", name), 0o755); err == nil {
							err = os.Rename(c.Path("d", name), c.Path("e", name))
						}
					case 3:
						if err = os.Mkdir(c.Path("e", name), 0o755); err == nil {
							err = os.Remove(c.Path("e", name))
						}
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		sameAttrs(t, fmt.Sprintf("round %d", round), c, s, "d")
		sameAttrs(t, fmt.Sprintf("round %d", round), c, s, "e")
	}
}

// TestDirAttrsOtherMount: a mount that just changed a directory sees
// another mount's later change of it within the attribute timeout (1 s),
// and a name the other mount created within the negative-entry timeout,
// though it cached the directory's attributes and the name's absence
// itself; its own create of a name it had found missing shows at once.
func TestDirAttrsOtherMount(t *testing.T) {
	a, b := twoMounts(t)
	ok(t, os.Mkdir(a.Path("d"), 0o755), "mkdir")
	// Through a descriptor: a path's lookup would refresh the attributes
	// when the directory's own entry times out.
	dir, err := os.Open(a.Path("d"))
	ok(t, err, "open")
	defer dir.Close()
	const limit = time.Second + 500*time.Millisecond // the timeouts, and slack for a busy machine
	for round := 0; round < 3; round++ {
		mine := fmt.Sprintf("mine%d", round)
		create(t, a.Path("d", fmt.Sprintf("f%d", round)))
		before := fstat(t, dir).Nlink // kept from a's create
		theirs := fmt.Sprintf("theirs%d", round)
		wantGone(t, a.Path("d", theirs)) // a caches its absence
		wantGone(t, a.Path("d", mine))
		ok(t, os.Mkdir(b.Path("d", theirs), 0o755), "mkdir on the other mount")
		done := time.Now()
		for fstat(t, dir).Nlink != before+1 {
			if time.Since(done) > limit {
				t.Fatalf("round %d: the other mount's mkdir not seen after %v (nlink still %d)", round, limit, before)
			}
			time.Sleep(20 * time.Millisecond)
		}
		for {
			_, err := os.Lstat(a.Path("d", theirs))
			if err == nil {
				break
			}
			if err.(*os.PathError).Err != syscall.ENOENT || time.Since(done) > limit {
				t.Fatalf("round %d: the other mount's new name not seen after %v: %v", round, time.Since(done), err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		create(t, a.Path("d", mine))
		lstat(t, a.Path("d", mine)) // at once, though a had cached its absence
	}
}
