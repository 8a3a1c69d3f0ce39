package e2e

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestErrnos drives each error case the kernel passes through to the file
// system and checks the exact errno.
func TestErrnos(t *testing.T) {
	m := mountFresh(t)
	p := m.Path
	writeFile(t, p("file"), []byte("f"), 0o644)
	ok(t, unix.Mkdir(p("dir"), 0o755), "mkdir")
	writeFile(t, p("dir", "x"), nil, 0o644)
	ok(t, unix.Mkdir(p("empty"), 0o755), "mkdir")
	long := strings.Repeat("n", 256)
	max := strings.Repeat("m", 255)
	var st unix.Stat_t

	cases := []struct {
		name string
		err  error
		want syscall.Errno
	}{
		{"stat missing", unix.Stat(p("missing"), &st), syscall.ENOENT},
		{"open missing", openErr(p("missing"), os.O_RDONLY), syscall.ENOENT},
		{"unlink missing", unix.Unlink(p("missing")), syscall.ENOENT},
		{"rmdir missing", unix.Rmdir(p("missing")), syscall.ENOENT},
		{"create under missing", openErr(p("missing", "f"), os.O_CREATE|os.O_WRONLY), syscall.ENOENT},
		{"open O_EXCL existing", openErr(p("file"), os.O_CREATE|os.O_EXCL|os.O_WRONLY), syscall.EEXIST},
		{"mkdir existing file", unix.Mkdir(p("file"), 0o755), syscall.EEXIST},
		{"mkdir existing dir", unix.Mkdir(p("dir"), 0o755), syscall.EEXIST},
		{"symlink existing", unix.Symlink("x", p("dir")), syscall.EEXIST},
		{"mknod existing", unix.Mknod(p("file"), syscall.S_IFIFO|0o644, 0), syscall.EEXIST},
		{"rmdir non-empty", unix.Rmdir(p("dir")), syscall.ENOTEMPTY},
		{"open dir for write", openErr(p("dir"), os.O_WRONLY), syscall.EISDIR},
		{"open dir O_RDWR", openErr(p("dir"), os.O_RDWR), syscall.EISDIR},
		{"unlink dir", unix.Unlink(p("empty")), syscall.EISDIR},
		{"rename file over dir", unix.Rename(p("file"), p("empty")), syscall.EISDIR},
		{"path through file", unix.Stat(p("file", "x"), &st), syscall.ENOTDIR},
		{"create through file", openErr(p("file", "x"), os.O_CREATE|os.O_WRONLY), syscall.ENOTDIR},
		{"rmdir file", unix.Rmdir(p("file")), syscall.ENOTDIR},
		{"rename dir over file", unix.Rename(p("empty"), p("file")), syscall.ENOTDIR},
		{"O_DIRECTORY on file", openErr(p("file"), os.O_RDONLY|syscall.O_DIRECTORY), syscall.ENOTDIR},
		{"create 256-byte name", openErr(p(long), os.O_CREATE|os.O_WRONLY), syscall.ENAMETOOLONG},
		{"mkdir 256-byte name", unix.Mkdir(p(long), 0o755), syscall.ENAMETOOLONG},
		{"stat 256-byte name", unix.Stat(p(long), &st), syscall.ENAMETOOLONG},
		{"symlink 256-byte name", unix.Symlink("x", p(long)), syscall.ENAMETOOLONG},
		{"link to 256-byte name", unix.Link(p("file"), p(long)), syscall.ENAMETOOLONG},
		{"rename to 256-byte name", unix.Rename(p("file"), p(long)), syscall.ENAMETOOLONG},
	}
	for _, c := range cases {
		wantErrno(t, c.err, c.want, c.name)
	}
	// 255 bytes is the limit, not past it.
	writeFile(t, p(max), []byte("ok"), 0o644)
	wantContent(t, p(max), []byte("ok"))
	ents, err := os.ReadDir(m.Dir)
	ok(t, err, "readdir")
	found := false
	for _, e := range ents {
		found = found || e.Name() == max
	}
	if !found {
		t.Error("255-byte name not listed")
	}
}

func openErr(path string, flag int) error {
	f, err := os.OpenFile(path, flag, 0o644)
	if err == nil {
		f.Close()
	}
	return err
}
