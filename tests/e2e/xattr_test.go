package e2e

import (
	"bytes"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestXattr(t *testing.T) {
	m := mountFresh(t)
	p := m.Path("x")
	writeFile(t, p, []byte("data"), 0o644)
	buf := make([]byte, 1024)

	_, err := unix.Getxattr(p, "user.missing", buf)
	wantErrno(t, err, syscall.ENODATA, "getxattr missing")
	ok(t, unix.Setxattr(p, "user.a", []byte("alpha"), 0), "setxattr")
	n, err := unix.Getxattr(p, "user.a", buf)
	ok(t, err, "getxattr")
	if string(buf[:n]) != "alpha" {
		t.Errorf("user.a = %q", buf[:n])
	}
	// Size probe and too-small buffer.
	n, err = unix.Getxattr(p, "user.a", nil)
	if err != nil || n != 5 {
		t.Errorf("getxattr size probe = %d %v, want 5", n, err)
	}
	_, err = unix.Getxattr(p, "user.a", make([]byte, 2))
	wantErrno(t, err, syscall.ERANGE, "getxattr small buffer")

	wantErrno(t, unix.Setxattr(p, "user.a", []byte("x"), unix.XATTR_CREATE), syscall.EEXIST, "XATTR_CREATE existing")
	wantErrno(t, unix.Setxattr(p, "user.b", []byte("x"), unix.XATTR_REPLACE), syscall.ENODATA, "XATTR_REPLACE missing")
	ok(t, unix.Setxattr(p, "user.a", []byte("replaced"), unix.XATTR_REPLACE), "XATTR_REPLACE existing")
	ok(t, unix.Setxattr(p, "user.b", nil, unix.XATTR_CREATE), "XATTR_CREATE empty value")
	n, err = unix.Getxattr(p, "user.b", buf)
	if err != nil || n != 0 {
		t.Errorf("empty value: %d %v", n, err)
	}
	big := bytes.Repeat([]byte{0xab, 0}, 2000) // binary, with NULs
	ok(t, unix.Setxattr(p, "user.big", big, 0), "setxattr binary 4000 bytes")
	n, err = unix.Getxattr(p, "user.big", make([]byte, 8192))
	if err != nil || n != len(big) {
		t.Errorf("getxattr big = %d %v", n, err)
	}

	max := bytes.Repeat([]byte{'m'}, 65536)
	ok(t, unix.Setxattr(p, "user.max", max, 0), "setxattr 64 KiB value")
	n, err = unix.Getxattr(p, "user.max", make([]byte, 65536))
	if err != nil || n != len(max) {
		t.Errorf("getxattr 64 KiB = %d %v", n, err)
	}
	wantErrno(t, unix.Setxattr(p, "user.toobig", make([]byte, 65537), 0), syscall.E2BIG, "setxattr 64 KiB + 1")
	wantErrno(t, unix.Setxattr(p, "user."+strings.Repeat("n", 251), nil, 0), syscall.ERANGE, "xattr name of 256 bytes")
	ok(t, unix.Removexattr(p, "user.max"), "removexattr max")
	wantList(t, p, []string{"user.a", "user.b", "user.big"})
	ok(t, unix.Removexattr(p, "user.b"), "removexattr")
	wantErrno(t, unix.Removexattr(p, "user.b"), syscall.ENODATA, "removexattr again")
	wantList(t, p, []string{"user.a", "user.big"})

	// On a directory and a symlink itself (user.* is not allowed on symlinks).
	ok(t, unix.Mkdir(m.Path("d"), 0o755), "mkdir")
	ok(t, unix.Setxattr(m.Path("d"), "user.dir", []byte("d"), 0), "setxattr dir")
	wantList(t, m.Path("d"), []string{"user.dir"})
	ok(t, unix.Symlink("x", m.Path("l")), "symlink")
	wantErrno(t, unix.Lsetxattr(m.Path("l"), "user.l", []byte("l"), 0), syscall.EPERM, "user xattr on symlink")

	// Content untouched, values survive a remount.
	m = m.Remount(t)
	p = m.Path("x")
	wantContent(t, p, []byte("data"))
	wantList(t, p, []string{"user.a", "user.big"})
	n, err = unix.Getxattr(p, "user.a", buf)
	if err != nil || string(buf[:n]) != "replaced" {
		t.Errorf("after remount user.a = %q %v", buf[:n], err)
	}
}

// wantList fails t unless path's user.* xattr names are exactly names.
func wantList(t *testing.T, path string, names []string) {
	t.Helper()
	got := listXattr(t, path)
	slices.Sort(names)
	if !slices.Equal(got, names) {
		t.Errorf("listxattr %s = %v, want %v", path, got, names)
	}
}

func listXattr(t *testing.T, path string) []string {
	t.Helper()
	n, err := unix.Listxattr(path, nil)
	ok(t, err, "listxattr size")
	buf := make([]byte, n)
	n, err = unix.Listxattr(path, buf)
	ok(t, err, "listxattr")
	var names []string
	for _, s := range strings.Split(string(buf[:n]), "\x00") {
		if strings.HasPrefix(s, "user.") {
			names = append(names, s)
		}
	}
	slices.Sort(names)
	return names
}
