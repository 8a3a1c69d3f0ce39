package e2e

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"shoal/internal/testutil"
)

// asNobody runs one helper operation as uid/gid 65534 and returns "OK" or
// the errno name.
func asNobody(t *testing.T, op string, args ...string) string {
	t.Helper()
	out, code := testutil.RunHelper(t, testutil.Nobody, "op", append([]string{op}, args...)...)
	if code != 0 {
		t.Fatalf("helper op %s %v exited %d: %s", op, args, code, out)
	}
	return out
}

// TestPermissions checks that the mount enforces permissions for an
// unprivileged user (the mount uses default_permissions and allow_other).
func TestPermissions(t *testing.T) {
	m := mountFresh(t)
	p := m.Path
	ok(t, os.Chmod(m.Dir, 0o755), "chmod root")
	writeFile(t, p("private"), []byte("secret"), 0o600)
	writeFile(t, p("public"), []byte("hello"), 0o644)
	ok(t, unix.Mkdir(p("closed"), 0o700), "mkdir")
	writeFile(t, p("closed", "f"), nil, 0o644)
	ok(t, unix.Mkdir(p("ro"), 0o755), "mkdir")
	ok(t, unix.Mkdir(p("open"), 0o777), "mkdir")
	ok(t, unix.Mkdir(p("sticky"), 0o1777), "mkdir")
	writeFile(t, p("sticky", "roots"), nil, 0o666)
	writeFile(t, p("mine"), nil, 0o644)
	ok(t, os.Chown(p("mine"), 65534, 65534), "chown")
	ok(t, unix.Setxattr(p("private"), "user.x", []byte("v"), 0), "setxattr")

	cases := []struct{ op, path, want string }{
		{"read", p("private"), "EACCES"},
		{"read", p("public"), "OK"},
		{"write", p("public"), "EACCES"},
		{"truncate", p("public"), "EACCES"},
		{"getxattr", p("private"), "EACCES"},
		{"setxattr", p("public"), "EACCES"},
		{"list", p("closed"), "EACCES"},
		{"stat", p("closed", "f"), "EACCES"},
		{"create", p("ro", "new"), "EACCES"},
		{"mkdir", p("ro", "newdir"), "EACCES"},
		{"unlink", p("public"), "EACCES"},
		{"chmod", p("public"), "EPERM"},
		{"chown", p("mine"), "EPERM"},
		{"utime-set", p("public"), "EPERM"},
		{"utime-now", p("public"), "EACCES"},
		{"create", p("open", "new"), "OK"},
		{"unlink", p("sticky", "roots"), "EPERM"},
		{"write", p("mine"), "OK"},
		{"chmod", p("mine"), "OK"},
		{"utime-set", p("mine"), "OK"},
	}
	for _, c := range cases {
		if got := asNobody(t, c.op, c.path); got != c.want {
			t.Errorf("as nobody: %s %s = %s, want %s", c.op, c.path, got, c.want)
		}
	}
	if st := stat(t, p("open", "new")); st.Uid != 65534 || st.Gid != 65534 {
		t.Errorf("file created by nobody is owned by %d:%d", st.Uid, st.Gid)
	}
	// Root is not bound by the mode bits.
	ok(t, os.Chmod(p("private"), 0), "chmod 0")
	wantContent(t, p("private"), []byte("secret"))
}

// TestSetgidDirAndKillSuid checks the set-id rules: entries created in a
// setgid directory take its group (subdirectories also the setgid bit),
// and a write by another user clears set-user-ID and set-group-ID.
func TestSetgidDirAndKillSuid(t *testing.T) {
	m := mountFresh(t)
	p := m.Path
	ok(t, unix.Mkdir(p("sg"), 0o777), "mkdir")
	ok(t, unix.Chown(p("sg"), 0, 1234), "chown")
	ok(t, unix.Chmod(p("sg"), 0o2777), "chmod g+s")
	writeFile(t, p("sg", "f"), nil, 0o644)
	ok(t, unix.Mkdir(p("sg", "d"), 0o755), "mkdir in setgid dir")
	if st := stat(t, p("sg", "f")); st.Gid != 1234 {
		t.Errorf("file in setgid dir has gid %d, want 1234", st.Gid)
	}
	if st := stat(t, p("sg", "d")); st.Gid != 1234 || st.Mode&unix.S_ISGID == 0 {
		t.Errorf("dir in setgid dir: gid %d mode %o, want gid 1234 and setgid", st.Gid, st.Mode)
	}
	if got := asNobody(t, "create", p("sg", "byNobody")); got != "OK" {
		t.Fatalf("create in 2777 dir as nobody: %s", got)
	}
	if st := stat(t, p("sg", "byNobody")); st.Uid != 65534 || st.Gid != 1234 {
		t.Errorf("nobody's file in setgid dir: %d:%d, want 65534:1234", st.Uid, st.Gid)
	}

	writeFile(t, p("suid"), []byte("x"), 0o644)
	ok(t, unix.Chmod(p("suid"), 0o6777), "chmod 6777")
	if got := asNobody(t, "write", p("suid")); got != "OK" {
		t.Fatalf("write 6777 file as nobody: %s", got)
	}
	if st := stat(t, p("suid")); st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
		t.Errorf("write by another user kept set-id bits: mode %o", st.Mode)
	}
}
