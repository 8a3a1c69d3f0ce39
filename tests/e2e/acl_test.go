package e2e

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shoal/internal/testutil"
)

// These tests drive POSIX ACLs through the mount with the acl package's
// tools (setfacl, getfacl) and coreutils, as users do.

// run runs a command and returns its standard output, failing t on error.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	var stderr strings.Builder
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// facl returns getfacl's entries for path, without header or effective
// rights: one "tag:qualifier:perms" per line.
func facl(t *testing.T, args ...string) string {
	t.Helper()
	return run(t, "getfacl", append([]string{"-cE"}, args...)...)
}

// requireACLTools skips (or, with SHOAL_REQUIRE_FUSE, fails) without
// setfacl and getfacl.
func requireACLTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"setfacl", "getfacl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("SHOAL_REQUIRE_FUSE") != "" {
				t.Fatalf("%s not installed (apt-get install acl)", tool)
			}
			t.Skipf("%s not installed (apt-get install acl)", tool)
		}
	}
}

// modes walks root and returns each entry's mode (type and permission
// bits, set-id and sticky included) by relative path.
func modes(t *testing.T, root string) map[string]uint32 {
	t.Helper()
	out := map[string]uint32{}
	err := filepath.WalkDir(root, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		out[rel] = lstat(t, path).Mode
		return nil
	})
	ok(t, err, "walk "+root)
	return out
}

// TestACLCopyKeepsModes is issue 13: cp -a and cp -p set an ACL
// equivalent to the mode after creating with 0600/0700, and the copy must
// end up with the source's modes.
func TestACLCopyKeepsModes(t *testing.T) {
	requireACLTools(t)
	m := mountFresh(t)
	src := filepath.Join(t.TempDir(), "src")
	tree := []struct {
		path string
		mode os.FileMode
		dir  bool
	}{
		{"", 0o755, true}, {"x", 0o755, false}, {"r", 0o640, false}, {"own", 0o700, false},
		{"ro", 0o444, false}, {"suid", 0o755 | os.ModeSetuid, false},
		{"tmp", 0o777 | os.ModeSticky, true}, {"tmp/f", 0o666, false},
		{"sg", 0o2775, true}, {"sg/f", 0o660, false}, {"priv", 0o700, true}, {"priv/f", 0o600, false},
		{"search", 0o711, true},
	}
	for _, e := range tree {
		p := filepath.Join(src, e.path)
		if e.dir {
			ok(t, os.MkdirAll(p, 0o700), "mkdir")
		} else {
			writeFile(t, p, []byte(e.path), 0o600)
		}
		perm := uint32(e.mode.Perm())
		if e.mode&os.ModeSetuid != 0 {
			perm |= unix.S_ISUID
		}
		if e.mode&os.ModeSticky != 0 {
			perm |= unix.S_ISVTX
		}
		if e.path == "sg" {
			perm = 0o2775
		}
		ok(t, unix.Chmod(p, perm), "chmod "+e.path)
	}
	want := modes(t, src)
	run(t, "cp", "-a", src, m.Path("a"))
	run(t, "cp", "-rp", src, m.Path("p"))
	for _, dst := range []string{"a", "p"} {
		got := modes(t, m.Path(dst))
		for path, mode := range want {
			if got[path] != mode {
				t.Errorf("cp to %s: %s has mode %o, want %o", dst, path, got[path], mode)
			}
		}
	}
	// And a copy within the mount, from Shoal to Shoal.
	run(t, "cp", "-a", m.Path("a"), m.Path("again"))
	if got := modes(t, m.Path("again")); got["tmp"] != want["tmp"] || got["r"] != want["r"] {
		t.Errorf("cp -a within the mount: tmp %o r %o, want %o %o", got["tmp"], got["r"], want["tmp"], want["r"])
	}
}

// TestACLNamedUser: an entry for one user grants that user access the
// mode does not, chmod narrows it through the mask, and removing the
// entry revokes it; the kernel enforces all of it.
func TestACLNamedUser(t *testing.T) {
	requireACLTools(t)
	m := mountFresh(t)
	ok(t, os.Chmod(m.Dir, 0o755), "chmod root")
	f := m.Path("secret")
	writeFile(t, f, []byte("s"), 0o600)
	if got := asNobody(t, "read", f); got != "EACCES" {
		t.Fatalf("nobody reads a 0600 file: %s", got)
	}
	run(t, "setfacl", "-m", "u:nobody:r", f)
	if got := asNobody(t, "read", f); got != "OK" {
		t.Errorf("nobody reads after setfacl -m u:nobody:r: %s", got)
	}
	if got := asNobody(t, "write", f); got != "EACCES" {
		t.Errorf("nobody writes with r only: %s", got)
	}
	if mode := stat(t, f).Mode & 0o7777; mode != 0o640 {
		t.Errorf("mode with the ACL %o, want 640 (group bits are the mask)", mode)
	}
	wantFacl := "user::rw-\nuser:nobody:r--\ngroup::---\nmask::r--\nother::---\n\n"
	if got := facl(t, f); got != wantFacl {
		t.Errorf("getfacl:\n%s\nwant\n%s", got, wantFacl)
	}

	ok(t, unix.Chmod(f, 0o600), "chmod 600")
	if got := facl(t, f); !strings.Contains(got, "mask::---") {
		t.Errorf("after chmod 600 the mask should be ---:\n%s", got)
	}
	if got := asNobody(t, "read", f); got != "EACCES" {
		t.Errorf("nobody reads after chmod 600 emptied the mask: %s", got)
	}
	ok(t, unix.Chmod(f, 0o640), "chmod 640")
	if got := asNobody(t, "read", f); got != "OK" {
		t.Errorf("nobody reads after chmod 640 restored the mask: %s", got)
	}

	run(t, "setfacl", "-x", "u:nobody", f)
	if got := asNobody(t, "read", f); got != "EACCES" {
		t.Errorf("nobody reads after setfacl -x u:nobody: %s", got)
	}
	if got := facl(t, f); strings.Contains(got, "nobody") {
		t.Errorf("getfacl after -x still names nobody:\n%s", got)
	}
}

// TestACLKillSgid: setting an ACL on a setgid file by its owner, who is
// not in the file's group, clears setgid (the kernel tells the mount so
// through FUSE_SETXATTR_ACL_KILL_SGID).
func TestACLKillSgid(t *testing.T) {
	requireACLTools(t)
	m := mountFresh(t)
	ok(t, os.Chmod(m.Dir, 0o755), "chmod root")
	f := m.Path("sg")
	writeFile(t, f, nil, 0o644)
	ok(t, os.Chown(f, 65534, 0), "chown nobody:root")
	ok(t, unix.Chmod(f, 0o2755), "chmod g+s")
	cmd := exec.Command("setfacl", "-m", "u:daemon:r", f)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: testutil.Nobody}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("setfacl as nobody: %v\n%s", err, out)
	}
	if mode := stat(t, f).Mode & 0o7777; mode != 0o755 {
		t.Errorf("after setfacl by an owner outside the group: mode %o, want 755", mode)
	}
}

// TestACLDefaultInherit: a directory's default ACL becomes the access ACL
// of new files and the access and default ACL of new directories, in
// place of the umask; without one the umask applies.
func TestACLDefaultInherit(t *testing.T) {
	requireACLTools(t)
	m := mountFresh(t)
	ok(t, os.Chmod(m.Dir, 0o755), "chmod root")
	old := unix.Umask(0o077)
	defer unix.Umask(old)

	d := m.Path("shared")
	ok(t, unix.Mkdir(d, 0o755), "mkdir")
	writeFile(t, m.Path("plain"), nil, 0o666)
	if mode := stat(t, m.Path("plain")).Mode & 0o777; mode != 0o600 {
		t.Errorf("umask 077 without a default ACL: mode %o, want 600", mode)
	}
	if mode := stat(t, d).Mode & 0o777; mode != 0o700 {
		t.Errorf("umask 077 without a default ACL: directory mode %o, want 700", mode)
	}
	ok(t, unix.Chmod(d, 0o755), "chmod")
	run(t, "setfacl", "-d", "-m", "u:nobody:rwx", d)
	def := "user::rwx\nuser:nobody:rwx\ngroup::r-x\nmask::rwx\nother::r-x\n"
	if got := facl(t, "-d", d); got != def+"\n" {
		t.Fatalf("default ACL:\n%s\nwant\n%s", got, def)
	}

	f := filepath.Join(d, "f")
	writeFile(t, f, nil, 0o666)
	if mode := stat(t, f).Mode & 0o777; mode != 0o664 {
		t.Errorf("file under a default ACL with umask 077: mode %o, want 664", mode)
	}
	if got, want := facl(t, f), "user::rw-\nuser:nobody:rwx\ngroup::r-x\nmask::rw-\nother::r--\n\n"; got != want {
		t.Errorf("inherited file ACL:\n%s\nwant\n%s", got, want)
	}
	if got := asNobody(t, "write", f); got != "OK" {
		t.Errorf("nobody writes through the inherited ACL: %s", got)
	}

	sub := filepath.Join(d, "sub")
	ok(t, unix.Mkdir(sub, 0o777), "mkdir sub")
	wantDir := "user::rwx\nuser:nobody:rwx\ngroup::r-x\nmask::rwx\nother::r-x\n" +
		"default:user::rwx\ndefault:user:nobody:rwx\ndefault:group::r-x\ndefault:mask::rwx\ndefault:other::r-x\n\n"
	if got := facl(t, sub); got != wantDir {
		t.Errorf("inherited directory ACLs:\n%s\nwant\n%s", got, wantDir)
	}
	if got := asNobody(t, "create", filepath.Join(sub, "by-nobody")); got != "OK" {
		t.Errorf("nobody creates in the inherited directory: %s", got)
	}
}

// TestACLRestoreRoundTrip: getfacl -R output restored with setfacl
// --restore after the ACLs were stripped gives the same getfacl output.
func TestACLRestoreRoundTrip(t *testing.T) {
	requireACLTools(t)
	m := mountFresh(t)
	root := m.Path("tree")
	ok(t, unix.Mkdir(root, 0o750), "mkdir")
	ok(t, unix.Mkdir(filepath.Join(root, "d"), 0o2770), "mkdir")
	writeFile(t, filepath.Join(root, "a"), nil, 0o644)
	writeFile(t, filepath.Join(root, "d", "b"), nil, 0o600)
	run(t, "setfacl", "-m", "u:nobody:rw,g:daemon:r,o::-", filepath.Join(root, "a"))
	run(t, "setfacl", "-m", "d:g:daemon:rwx,u:nobody:x", filepath.Join(root, "d"))
	run(t, "setfacl", "-m", "m::r", filepath.Join(root, "d", "b"))
	before := run(t, "getfacl", "-R", "--absolute-names", root)
	for _, entry := range []string{"user:nobody:rw-", "group:daemon:r--", "default:group:daemon:rwx", "user:nobody:--x"} {
		if !strings.Contains(before, entry) {
			t.Fatalf("getfacl -R lacks %q:\n%s", entry, before)
		}
	}

	run(t, "setfacl", "-R", "-b", root)
	stripped := run(t, "getfacl", "-R", "--absolute-names", root)
	if stripped == before || strings.Contains(stripped, "nobody") {
		t.Fatalf("setfacl -b left the ACLs:\n%s", stripped)
	}
	dump := filepath.Join(t.TempDir(), "acls")
	ok(t, os.WriteFile(dump, []byte(before), 0o600), "write dump")
	run(t, "setfacl", "--restore="+dump)
	if after := run(t, "getfacl", "-R", "--absolute-names", root); after != before {
		t.Errorf("after --restore:\n%s\nwant\n%s", after, before)
	}
}

// TestACLOtherMount: another mount of the volume sees an ACL change once
// its attribute cache times out (the kernel drops cached ACLs along with
// the attributes): the bound is --attr-timeout.
func TestACLOtherMount(t *testing.T) {
	requireACLTools(t)
	a, b := twoMounts(t, "--allow-other")
	ok(t, os.Chmod(a.Dir, 0o755), "chmod root")
	writeFile(t, a.Path("f"), []byte("x"), 0o600)
	if got := asNobody(t, "read", b.Path("f")); got != "EACCES" {
		t.Fatalf("nobody reads a 0600 file on the other mount: %s", got)
	}
	run(t, "setfacl", "-m", "u:nobody:r", a.Path("f"))
	time.Sleep(1500 * time.Millisecond) // the default 1 s attribute timeout
	if got := asNobody(t, "read", b.Path("f")); got != "OK" {
		t.Errorf("nobody reads on the other mount after setfacl: %s", got)
	}
	run(t, "setfacl", "-x", "u:nobody", a.Path("f"))
	time.Sleep(1500 * time.Millisecond)
	if got := asNobody(t, "read", b.Path("f")); got != "EACCES" {
		t.Errorf("nobody reads on the other mount after setfacl -x: %s", got)
	}
}
