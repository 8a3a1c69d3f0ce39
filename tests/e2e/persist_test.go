package e2e

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// node is everything about one path that must survive a remount.
type node struct {
	Mode, Uid, Gid uint32
	Nlink          uint64
	Ino            uint64
	Size           int64
	Mtim, Ctim     unix.Timespec
	Content        [32]byte // sha256 for files
	Target         string   // symlink target
	Xattrs         map[string]string
}

// snapshot walks root and records every path's node (root itself as ".").
func snapshot(t *testing.T, root string) map[string]node {
	t.Helper()
	out := map[string]node{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		out[rel] = describe(t, path)
		return nil
	})
	ok(t, err, "walk")
	return out
}

func describe(t *testing.T, path string) node {
	t.Helper()
	st := lstat(t, path)
	n := node{Mode: st.Mode, Uid: st.Uid, Gid: st.Gid, Nlink: st.Nlink, Ino: st.Ino,
		Size: st.Size, Mtim: st.Mtim, Ctim: st.Ctim, Xattrs: map[string]string{}}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFREG:
		n.Content = sha256.Sum256(readFile(t, path))
	case syscall.S_IFLNK:
		n.Target, _ = os.Readlink(path)
		return n // user xattrs are not allowed on symlinks
	}
	for _, name := range listXattr(t, path) {
		buf := make([]byte, 65536)
		k, err := unix.Getxattr(path, name, buf)
		ok(t, err, "getxattr "+name)
		n.Xattrs[name] = string(buf[:k])
	}
	return n
}

// TestPersist builds a tree using every kind of operation, remounts, and
// checks that every attribute, content, link and xattr came back the same.
func TestPersist(t *testing.T) {
	m := mountFresh(t)
	buildTree(t, m.Path)
	before := snapshot(t, m.Dir)
	m = m.Remount(t)
	after := snapshot(t, m.Dir)
	compareSnapshots(t, before, after)
	// And once more after changing things on the remounted volume.
	ok(t, os.Rename(m.Path("dir", "sub"), m.Path("moved")), "rename")
	ok(t, os.Remove(m.Path("hard2")), "unlink")
	before = snapshot(t, m.Dir)
	m = m.Remount(t)
	compareSnapshots(t, before, snapshot(t, m.Dir))
}

func buildTree(t *testing.T, p func(...string) string) {
	ok(t, os.MkdirAll(p("dir", "sub", "deep"), 0o755), "mkdir -p")
	ok(t, unix.Mkdir(p("modes"), 0o711), "mkdir")
	for i, mode := range []uint32{0o600, 0o644, 0o755, 0o4711, 0o2750, 0o1777, 0o000} {
		name := p("modes", fmt.Sprintf("m%o", mode))
		writeFile(t, name, randBytes(uint64(i), i*1000), 0o600)
		ok(t, unix.Chmod(name, mode), "chmod")
	}
	writeFile(t, p("dir", "sub", "deep", "big"), randBytes(50, 6<<20+17), 0o644)
	writeFile(t, p("empty"), nil, 0o644)
	writeFile(t, p("owned"), []byte("owned"), 0o640)
	ok(t, unix.Chown(p("owned"), 1000, 2000), "chown")
	writeFile(t, p("timed"), []byte("t"), 0o644)
	ok(t, unix.UtimesNanoAt(unix.AT_FDCWD, p("timed"), []unix.Timespec{{Sec: 1000000000, Nsec: 1}, {Sec: 1100000000, Nsec: 999999999}}, 0), "utimensat")
	writeFile(t, p("hard1"), []byte("linked"), 0o644)
	ok(t, unix.Link(p("hard1"), p("hard2")), "link")
	ok(t, unix.Link(p("hard1"), p("dir", "hard3")), "link")
	ok(t, unix.Symlink("dir/sub", p("sym")), "symlink")
	ok(t, unix.Symlink("/nowhere", p("dir", "dangling")), "symlink")
	ok(t, unix.Setxattr(p("owned"), "user.k1", []byte("v1"), 0), "setxattr")
	ok(t, unix.Setxattr(p("dir"), "user.k2", []byte{0, 1, 2}, 0), "setxattr")
	ok(t, unix.Mkfifo(p("fifo"), 0o644), "mkfifo")
	f, err := os.OpenFile(p("sparse"), os.O_CREATE|os.O_WRONLY, 0o644)
	ok(t, err, "create sparse")
	_, err = f.WriteAt([]byte("end"), 200<<20)
	ok(t, err, "pwrite")
	ok(t, f.Close(), "close")
	ok(t, os.Truncate(p("dir", "sub", "deep", "big"), 5<<20+1), "truncate")
	// Set directory times last: creating entries above moved them.
	ok(t, unix.UtimesNanoAt(unix.AT_FDCWD, p("dir", "sub"), []unix.Timespec{{Sec: 5, Nsec: 6}, {Sec: 7, Nsec: 8}}, 0), "utimensat dir")
}

func compareSnapshots(t *testing.T, before, after map[string]node) {
	t.Helper()
	if k1, k2 := slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)); !slices.Equal(k1, k2) {
		t.Errorf("paths differ after remount:\nbefore %v\nafter  %v", k1, k2)
	}
	for path, b := range before {
		a, found := after[path]
		if !found {
			continue
		}
		// atime may move (the snapshot itself reads files): not compared.
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s changed across remount:\nbefore %+v\nafter  %+v", path, b, a)
		}
	}
}
