package e2e

import (
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shoal/internal/testutil"
)

func TestAttrs(t *testing.T) {
	m := mountFresh(t)
	t.Run("Chmod", func(t *testing.T) { attrsChmod(t, m) })
	t.Run("Chown", func(t *testing.T) { attrsChown(t, m) })
	t.Run("UtimensNano", func(t *testing.T) { testUtimens(t, m.Path("times")) })
	t.Run("WriteMovesMtime", func(t *testing.T) { attrsWriteMovesMtime(t, m) })
	t.Run("DirTimes", func(t *testing.T) { testDirTimes(t, m.Path("dt")) })
	t.Run("Statfs", func(t *testing.T) { attrsStatfs(t, m) })
	t.Run("Access", func(t *testing.T) { attrsAccess(t, m) })
}

func attrsChmod(t *testing.T, m *testutil.Mount) {
	p := m.Path("chmod")
	writeFile(t, p, nil, 0o644)
	for _, mode := range []uint32{0o600, 0o000, 0o777, 0o4755, 0o2755, 0o1777} {
		before := stat(t, p)
		tick()
		ok(t, unix.Chmod(p, mode), "chmod")
		st := stat(t, p)
		if st.Mode != syscall.S_IFREG|mode {
			t.Errorf("chmod %o: mode is %o", mode, st.Mode)
		}
		if !ctime(st).After(ctime(before)) {
			t.Errorf("chmod %o did not move ctime", mode)
		}
		if mtime(st) != mtime(before) {
			t.Errorf("chmod %o changed mtime", mode)
		}
	}
}

func attrsChown(t *testing.T, m *testutil.Mount) {
	p := m.Path("chown")
	writeFile(t, p, nil, 0o644)
	ok(t, unix.Chown(p, 1234, 5678), "chown")
	if st := stat(t, p); st.Uid != 1234 || st.Gid != 5678 {
		t.Errorf("owner %d:%d, want 1234:5678", st.Uid, st.Gid)
	}
	ok(t, unix.Chown(p, -1, 42), "chgrp")
	if st := stat(t, p); st.Uid != 1234 || st.Gid != 42 {
		t.Errorf("owner %d:%d, want 1234:42", st.Uid, st.Gid)
	}
	ok(t, os.Symlink("chown", m.Path("chown-link")), "symlink")
	ok(t, unix.Lchown(m.Path("chown-link"), 77, 88), "lchown")
	if st := lstat(t, m.Path("chown-link")); st.Uid != 77 || st.Gid != 88 {
		t.Errorf("symlink owner %d:%d, want 77:88", st.Uid, st.Gid)
	}
	if st := stat(t, p); st.Uid != 1234 {
		t.Errorf("lchown followed the link: target uid %d", st.Uid)
	}
}

func attrsWriteMovesMtime(t *testing.T, m *testutil.Mount) {
	p := m.Path("mt")
	writeFile(t, p, []byte("a"), 0o644)
	before := stat(t, p)
	tick()
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	ok(t, err, "open")
	_, err = f.Write([]byte("b"))
	ok(t, err, "write")
	ok(t, f.Close(), "close")
	st := stat(t, p)
	if !mtime(st).After(mtime(before)) || !ctime(st).After(ctime(before)) {
		t.Errorf("write: mtime %v -> %v, ctime %v -> %v", mtime(before), mtime(st), ctime(before), ctime(st))
	}
	before = st
	tick()
	ok(t, os.Truncate(p, 0), "truncate")
	st = stat(t, p)
	if !mtime(st).After(mtime(before)) || !ctime(st).After(ctime(before)) {
		t.Errorf("truncate: mtime %v -> %v, ctime %v -> %v", mtime(before), mtime(st), ctime(before), ctime(st))
	}
}

func attrsStatfs(t *testing.T, m *testutil.Mount) {
	var s unix.Statfs_t
	ok(t, unix.Statfs(m.Dir, &s), "statfs")
	const fuseMagic = 0x65735546
	if s.Type != fuseMagic {
		t.Errorf("f_type %#x, want FUSE %#x", s.Type, fuseMagic)
	}
	if s.Bsize <= 0 || s.Blocks == 0 || s.Bfree > s.Blocks || s.Bavail > s.Blocks {
		t.Errorf("statfs blocks: bsize %d blocks %d free %d avail %d", s.Bsize, s.Blocks, s.Bfree, s.Bavail)
	}
	if s.Files == 0 || s.Ffree > s.Files || s.Namelen != 255 {
		t.Errorf("statfs inodes: files %d ffree %d namelen %d", s.Files, s.Ffree, s.Namelen)
	}
}

func attrsAccess(t *testing.T, m *testutil.Mount) {
	p := m.Path("acc")
	writeFile(t, p, nil, 0o644)
	ok(t, unix.Access(p, unix.R_OK|unix.W_OK), "access rw as root")
	wantErrno(t, unix.Access(p, unix.X_OK), syscall.EACCES, "access X_OK on 0644 as root")
	wantErrno(t, unix.Access(m.Path("nope"), unix.F_OK), syscall.ENOENT, "access missing")
}

func testUtimens(t *testing.T, p string) {
	writeFile(t, p, nil, 0o644)
	at := unix.Timespec{Sec: 1234567890, Nsec: 123456789}
	mt := unix.Timespec{Sec: 1500000000, Nsec: 987654321}
	ok(t, unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{at, mt}, 0), "utimensat")
	st := stat(t, p)
	if st.Atim != at || st.Mtim != mt {
		t.Errorf("times: atime %v mtime %v, want %v %v", st.Atim, st.Mtim, at, mt)
	}
	// UTIME_OMIT keeps atime; UTIME_NOW sets mtime to about now.
	ok(t, unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_NOW}}, 0), "utimensat omit/now")
	st = stat(t, p)
	if st.Atim != at {
		t.Errorf("UTIME_OMIT changed atime to %v", st.Atim)
	}
	if d := time.Since(mtime(st)); d < -time.Second || d > 10*time.Second {
		t.Errorf("UTIME_NOW set mtime %v (now %v)", mtime(st), time.Now())
	}
	// Times before 1970 and far in the future.
	old := unix.Timespec{Sec: -1000, Nsec: 5}
	future := unix.Timespec{Sec: 4102444800, Nsec: 1}
	ok(t, unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{old, future}, 0), "utimensat extremes")
	st = stat(t, p)
	if st.Atim != old || st.Mtim != future {
		t.Errorf("extreme times: atime %v mtime %v, want %v %v", st.Atim, st.Mtim, old, future)
	}
}

// testDirTimes checks that adding, renaming and removing entries moves the
// directory's mtime and ctime, and that unlink and link move the file's ctime.
func testDirTimes(t *testing.T, dir string) {
	ok(t, unix.Mkdir(dir, 0o755), "mkdir")
	steps := []struct {
		name string
		fn   func() error
	}{
		{"create", func() error { return os.WriteFile(dir+"/f", nil, 0o644) }},
		{"mkdir", func() error { return unix.Mkdir(dir+"/sub", 0o755) }},
		{"rename", func() error { return unix.Rename(dir+"/f", dir+"/g") }},
		{"link", func() error { return unix.Link(dir+"/g", dir+"/h") }},
		{"symlink", func() error { return unix.Symlink("g", dir+"/s") }},
		{"unlink", func() error { return unix.Unlink(dir + "/h") }},
		{"rmdir", func() error { return unix.Rmdir(dir + "/sub") }},
	}
	for _, s := range steps {
		before := stat(t, dir)
		var fileBefore unix.Stat_t
		_ = unix.Stat(dir+"/g", &fileBefore)
		tick()
		ok(t, s.fn(), s.name)
		st := stat(t, dir)
		if !mtime(st).After(mtime(before)) || !ctime(st).After(ctime(before)) {
			t.Errorf("%s: dir mtime %v -> %v, ctime %v -> %v", s.name, mtime(before), mtime(st), ctime(before), ctime(st))
		}
		if s.name == "link" || s.name == "unlink" {
			if fst := stat(t, dir+"/g"); !ctime(fst).After(ctime(fileBefore)) {
				t.Errorf("%s: file ctime did not move (%v)", s.name, ctime(fst))
			}
		}
	}
}
