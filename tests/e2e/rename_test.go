package e2e

import (
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestRename(t *testing.T) {
	m := mountFresh(t)
	p := m.Path
	ok(t, unix.Mkdir(p("a"), 0o755), "mkdir a")
	ok(t, unix.Mkdir(p("b"), 0o755), "mkdir b")

	t.Run("SameDir", func(t *testing.T) { renameSameDir(t, p) })
	t.Run("AcrossDirs", func(t *testing.T) { renameAcrossDirs(t, p) })
	t.Run("DirAcrossDirsNlink", func(t *testing.T) { renameDirAcrossDirsNlink(t, p) })
	t.Run("OverFile", func(t *testing.T) { renameOverFile(t, p) })
	t.Run("OverEmptyDir", func(t *testing.T) { renameOverEmptyDir(t, p) })
	t.Run("OverNonEmptyDir", func(t *testing.T) { renameOverNonEmptyDir(t, p) })
	t.Run("TypeMismatch", func(t *testing.T) { renameTypeMismatch(t, p) })
	t.Run("IntoOwnSubtree", func(t *testing.T) { renameIntoOwnSubtree(t, p) })
	t.Run("Missing", func(t *testing.T) { renameMissing(t, p) })
	t.Run("HardlinksSameInode", func(t *testing.T) { renameHardlinksSameInode(t, p) })
	t.Run("Noreplace", func(t *testing.T) { renameNoreplace(t, p) })
	t.Run("Exchange", func(t *testing.T) { testExchange(t, p) })
}

func renameSameDir(t *testing.T, p func(...string) string) {
	writeFile(t, p("a", "f1"), []byte("one"), 0o644)
	ino := stat(t, p("a", "f1")).Ino
	ok(t, unix.Rename(p("a", "f1"), p("a", "f2")), "rename")
	wantGone(t, p("a", "f1"))
	if st := stat(t, p("a", "f2")); st.Ino != ino {
		t.Errorf("inode changed across rename: %d -> %d", ino, st.Ino)
	}
	wantContent(t, p("a", "f2"), []byte("one"))
}

func renameAcrossDirs(t *testing.T, p func(...string) string) {
	writeFile(t, p("a", "x"), []byte("x"), 0o644)
	ok(t, unix.Rename(p("a", "x"), p("b", "x")), "rename across dirs")
	wantGone(t, p("a", "x"))
	wantContent(t, p("b", "x"), []byte("x"))
}

func renameDirAcrossDirsNlink(t *testing.T, p func(...string) string) {
	ok(t, unix.Mkdir(p("a", "sub"), 0o755), "mkdir")
	writeFile(t, p("a", "sub", "inside"), []byte("in"), 0o644)
	na, nb := stat(t, p("a")).Nlink, stat(t, p("b")).Nlink
	ok(t, unix.Rename(p("a", "sub"), p("b", "sub")), "rename dir")
	if got := stat(t, p("a")).Nlink; got != na-1 {
		t.Errorf("source parent nlink %d, want %d", got, na-1)
	}
	if got := stat(t, p("b")).Nlink; got != nb+1 {
		t.Errorf("target parent nlink %d, want %d", got, nb+1)
	}
	if stat(t, p("b", "sub")+"/..").Ino != stat(t, p("b")).Ino {
		t.Error("moved dir's .. does not point at its new parent")
	}
	wantContent(t, p("b", "sub", "inside"), []byte("in"))
}

func renameOverFile(t *testing.T, p func(...string) string) {
	writeFile(t, p("src"), []byte("new"), 0o644)
	writeFile(t, p("dst"), []byte("old"), 0o644)
	old, err := os.Open(p("dst"))
	ok(t, err, "open target")
	defer old.Close()
	ok(t, unix.Rename(p("src"), p("dst")), "rename over file")
	wantContent(t, p("dst"), []byte("new"))
	wantGone(t, p("src"))
	// The replaced file lives on through its open handle.
	b := make([]byte, 3)
	_, err = old.ReadAt(b, 0)
	ok(t, err, "read replaced file")
	if string(b) != "old" {
		t.Errorf("replaced file reads %q", b)
	}
	if st := fstat(t, old); st.Nlink != 0 {
		t.Errorf("replaced file nlink %d, want 0", st.Nlink)
	}
}

func renameOverEmptyDir(t *testing.T, p func(...string) string) {
	ok(t, unix.Mkdir(p("d1"), 0o755), "mkdir")
	ok(t, unix.Mkdir(p("d2"), 0o755), "mkdir")
	writeFile(t, p("d1", "f"), nil, 0o644)
	n := stat(t, p()).Nlink
	ok(t, unix.Rename(p("d1"), p("d2")), "rename over empty dir")
	wantGone(t, p("d1"))
	stat(t, p("d2", "f"))
	if got := stat(t, p()).Nlink; got != n-1 {
		t.Errorf("parent nlink %d, want %d", got, n-1)
	}
}

func renameOverNonEmptyDir(t *testing.T, p func(...string) string) {
	ok(t, unix.Mkdir(p("e1"), 0o755), "mkdir")
	ok(t, unix.Mkdir(p("e2"), 0o755), "mkdir")
	writeFile(t, p("e2", "f"), nil, 0o644)
	err := unix.Rename(p("e1"), p("e2"))
	if err != syscall.ENOTEMPTY && err != syscall.EEXIST {
		t.Errorf("rename over non-empty dir: %v, want ENOTEMPTY", err)
	}
}

func renameTypeMismatch(t *testing.T, p func(...string) string) {
	ok(t, unix.Mkdir(p("tdir"), 0o755), "mkdir")
	writeFile(t, p("tfile"), nil, 0o644)
	wantErrno(t, unix.Rename(p("tfile"), p("tdir")), syscall.EISDIR, "file over dir")
	wantErrno(t, unix.Rename(p("tdir"), p("tfile")), syscall.ENOTDIR, "dir over file")
}

func renameIntoOwnSubtree(t *testing.T, p func(...string) string) {
	ok(t, os.MkdirAll(p("top", "mid"), 0o755), "mkdir -p")
	wantErrno(t, unix.Rename(p("top"), p("top", "mid", "x")), syscall.EINVAL, "dir into its own subtree")
}

func renameMissing(t *testing.T, p func(...string) string) {
	wantErrno(t, unix.Rename(p("nothing"), p("x")), syscall.ENOENT, "rename missing")
}

func renameHardlinksSameInode(t *testing.T, p func(...string) string) {
	writeFile(t, p("h1"), []byte("h"), 0o644)
	ok(t, unix.Link(p("h1"), p("h2")), "link")
	ok(t, unix.Rename(p("h1"), p("h2")), "rename between links of one inode")
	stat(t, p("h1")) // POSIX: a no-op, both names stay
	stat(t, p("h2"))
}

func renameNoreplace(t *testing.T, p func(...string) string) {
	writeFile(t, p("n1"), []byte("1"), 0o644)
	writeFile(t, p("n2"), []byte("2"), 0o644)
	err := unix.Renameat2(unix.AT_FDCWD, p("n1"), unix.AT_FDCWD, p("n2"), unix.RENAME_NOREPLACE)
	wantErrno(t, err, syscall.EEXIST, "RENAME_NOREPLACE over existing")
	wantContent(t, p("n2"), []byte("2"))
	err = unix.Renameat2(unix.AT_FDCWD, p("n1"), unix.AT_FDCWD, p("n3"), unix.RENAME_NOREPLACE)
	ok(t, err, "RENAME_NOREPLACE to free name")
	wantContent(t, p("n3"), []byte("1"))
}

func testExchange(t *testing.T, p func(...string) string) {
	ok(t, unix.Mkdir(p("xa"), 0o755), "mkdir")
	ok(t, unix.Mkdir(p("xb"), 0o755), "mkdir")
	writeFile(t, p("xa", "file"), []byte("file"), 0o644)
	ok(t, unix.Mkdir(p("xb", "dir"), 0o755), "mkdir")
	writeFile(t, p("xb", "dir", "in"), []byte("in"), 0o644)
	fileIno, dirIno := stat(t, p("xa", "file")).Ino, stat(t, p("xb", "dir")).Ino
	na, nb := stat(t, p("xa")).Nlink, stat(t, p("xb")).Nlink
	err := unix.Renameat2(unix.AT_FDCWD, p("xa", "file"), unix.AT_FDCWD, p("xb", "dir"), unix.RENAME_EXCHANGE)
	ok(t, err, "RENAME_EXCHANGE file<->dir")
	if st := stat(t, p("xa", "file")); st.Ino != dirIno || st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		t.Errorf("xa/file is not the old dir (ino %d mode %o)", st.Ino, st.Mode)
	}
	if st := stat(t, p("xb", "dir")); st.Ino != fileIno {
		t.Errorf("xb/dir is not the old file (ino %d)", st.Ino)
	}
	wantContent(t, p("xa", "file", "in"), []byte("in"))
	wantContent(t, p("xb", "dir"), []byte("file"))
	if got := stat(t, p("xa")).Nlink; got != na+1 {
		t.Errorf("xa nlink %d, want %d (gained a subdir)", got, na+1)
	}
	if got := stat(t, p("xb")).Nlink; got != nb-1 {
		t.Errorf("xb nlink %d, want %d (lost a subdir)", got, nb-1)
	}
	if stat(t, p("xa", "file")+"/..").Ino != stat(t, p("xa")).Ino {
		t.Error("exchanged dir's .. does not point at its new parent")
	}
	err = unix.Renameat2(unix.AT_FDCWD, p("xa", "file"), unix.AT_FDCWD, p("xa", "none"), unix.RENAME_EXCHANGE)
	wantErrno(t, err, syscall.ENOENT, "RENAME_EXCHANGE with a missing target")
}

// wantGone fails t unless path does not exist.
func wantGone(t *testing.T, path string) {
	t.Helper()
	var st unix.Stat_t
	wantErrno(t, unix.Lstat(path, &st), syscall.ENOENT, "lstat "+path)
}
