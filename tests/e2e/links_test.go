package e2e

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestHardLinks(t *testing.T) {
	m := mountFresh(t)
	p := m.Path
	writeFile(t, p("a"), []byte("shared"), 0o644)
	ok(t, unix.Mkdir(p("d"), 0o755), "mkdir")
	ok(t, unix.Link(p("a"), p("b")), "link")
	ok(t, unix.Link(p("a"), p("d", "c")), "link into subdir")
	sa, sb, sc := stat(t, p("a")), stat(t, p("b")), stat(t, p("d", "c"))
	if sa.Ino != sb.Ino || sa.Ino != sc.Ino {
		t.Errorf("links have different inodes: %d %d %d", sa.Ino, sb.Ino, sc.Ino)
	}
	if sa.Nlink != 3 || sb.Nlink != 3 {
		t.Errorf("nlink %d/%d, want 3", sa.Nlink, sb.Nlink)
	}
	// A write through one name shows through the others.
	f, err := os.OpenFile(p("b"), os.O_WRONLY|os.O_APPEND, 0)
	ok(t, err, "open b")
	_, err = f.Write([]byte("+more"))
	ok(t, err, "append")
	ok(t, f.Close(), "close")
	wantContent(t, p("d", "c"), []byte("shared+more"))

	ok(t, unix.Unlink(p("a")), "unlink a")
	if st := stat(t, p("b")); st.Nlink != 2 {
		t.Errorf("nlink after unlink = %d, want 2", st.Nlink)
	}
	wantErrno(t, unix.Link(p("b"), p("d", "c")), syscall.EEXIST, "link over existing")
	wantErrno(t, unix.Link(p("d"), p("dlink")), syscall.EPERM, "link a directory")
	wantErrno(t, unix.Link(p("none"), p("x")), syscall.ENOENT, "link missing")

	m = m.Remount(t)
	if st := stat(t, m.Path("b")); st.Nlink != 2 || st.Ino != sa.Ino {
		t.Errorf("after remount: nlink %d ino %d, want 2 %d", st.Nlink, st.Ino, sa.Ino)
	}
	wantContent(t, m.Path("d", "c"), []byte("shared+more"))
}

func TestSymlinks(t *testing.T) {
	m := mountFresh(t)
	p := m.Path
	writeFile(t, p("target"), []byte("t"), 0o644)
	ok(t, unix.Symlink("target", p("rel")), "symlink")
	ok(t, unix.Symlink(p("target"), p("abs")), "symlink absolute")
	ok(t, unix.Symlink("does/not/exist", p("dangling")), "symlink dangling")
	long := strings.Repeat("d/", 2000) + "x" // 4001 bytes
	ok(t, unix.Symlink(long, p("long")), "symlink long target")

	for name, want := range map[string]string{"rel": "target", "abs": p("target"), "dangling": "does/not/exist", "long": long} {
		got, err := os.Readlink(p(name))
		if err != nil || got != want {
			t.Errorf("readlink %s = %q %v, want %q", name, got, err, want)
		}
		st := lstat(t, p(name))
		if st.Mode&syscall.S_IFMT != syscall.S_IFLNK || st.Size != int64(len(want)) {
			t.Errorf("lstat %s: mode %o size %d, want a symlink of size %d", name, st.Mode, st.Size, len(want))
		}
	}
	wantContent(t, p("rel"), []byte("t"))
	if stat(t, p("abs")).Ino != stat(t, p("target")).Ino {
		t.Error("stat through symlink did not reach the target")
	}
	var st unix.Stat_t
	wantErrno(t, unix.Stat(p("dangling"), &st), syscall.ENOENT, "stat dangling symlink")
	wantErrno(t, unix.Symlink("x", p("rel")), syscall.EEXIST, "symlink over existing")
	_, err := os.Readlink(p("target"))
	wantErrno(t, err, syscall.EINVAL, "readlink on a file")
	// Loop.
	ok(t, unix.Symlink("loop2", p("loop1")), "symlink")
	ok(t, unix.Symlink("loop1", p("loop2")), "symlink")
	_, err = os.ReadFile(p("loop1"))
	wantErrno(t, err, syscall.ELOOP, "open symlink loop")

	m = m.Remount(t)
	got, err := os.Readlink(m.Path("long"))
	if err != nil || got != long {
		t.Errorf("after remount: readlink long = %d bytes %v", len(got), err)
	}
	wantContent(t, m.Path("rel"), []byte("t"))
}
