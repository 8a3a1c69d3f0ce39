package service

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"shoal/internal/rundir"
	"shoal/internal/secret"
	"shoal/internal/testutil"
	"shoal/tests/isolate"
)

// system runs a system command (mount, umount) and returns its exit code
// and combined output.
func system(t *testing.T, env []string, name string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("%s: %v", name, err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// mountedType returns the type /proc/self/mountinfo shows at dir ("" if
// nothing is mounted there).
func mountedType(t *testing.T, dir string) string {
	t.Helper()
	ms, err := testutil.Mounts()
	if err != nil {
		t.Fatal(err)
	}
	typ := ""
	for _, m := range ms {
		if m.Point == dir {
			typ = m.FSType
		}
	}
	return typ
}

// serverPID reads the pid file a mount at dir writes (as the cli does).
func serverPID(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(rundir.Path(dir, ".pid"))
	if err != nil {
		t.Fatalf("pid file of the mount at %s: %v", dir, err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// gone reports whether pid has exited (a zombie counts: it has finished).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// checkMountedAndUmount checks that a Shoal mount serves dir, writes and
// reads a file through it, unmounts it with umount(8) and waits for its
// server to exit after closing the volume.
func checkMountedAndUmount(t *testing.T, dir string) {
	t.Helper()
	if typ := mountedType(t, dir); typ != "fuse.shoal" {
		t.Fatalf("%s: mounted type %q, want fuse.shoal", dir, typ)
	}
	pid := serverPID(t, dir)
	f := filepath.Join(dir, "hello")
	if err := os.WriteFile(f, []byte("through mount(8)"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(f); err != nil || string(b) != "through mount(8)" {
		t.Fatalf("read back %q, %v", b, err)
	}
	if code, out := system(t, nil, "umount", dir); code != 0 {
		t.Fatalf("umount %s: exit %d: %s", dir, code, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the mount server (pid %d) still runs 30s after umount", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if typ := mountedType(t, dir); typ != "" {
		t.Fatalf("%s still mounted (%s) after umount", dir, typ)
	}
}

func TestMountCommand(t *testing.T) {
	install(t)
	v := testutil.NewVolume(t)
	opts := "rw,_netdev,noauto,nofail,defaults,x-systemd.automount,entry_timeout=0,cache-size=64M,allow_other,log=" + filepath.Join(v.Dir, "mount.log")
	if code, out := system(t, nil, "mount", "-t", "shoal", "-o", opts, v.MetaURL, v.Mountpoint); code != 0 {
		t.Fatalf("mount -t shoal: exit %d: %s", code, out)
	}
	checkMountedAndUmount(t, v.Mountpoint)
	if b, _ := os.ReadFile(filepath.Join(v.Dir, "mount.log")); !strings.Contains(string(b), "unmounted; flushing and closing") {
		t.Errorf("the log named by log= does not show a clean exit:\n%s", b)
	}
	// The type /proc/mounts shows works too (mount.fuse.shoal).
	if code, out := system(t, nil, "mount", "-t", "fuse.shoal", v.MetaURL, v.Mountpoint); code != 0 {
		t.Fatalf("mount -t fuse.shoal: exit %d: %s", code, out)
	}
	checkMountedAndUmount(t, v.Mountpoint)
	// A copy of the binary as the helper (not a link) works as well.
	if err := copyFile(testutil.Binary(t), helpers[0]); err != nil {
		t.Fatal(err)
	}
	if code, out := system(t, nil, "mount", "-t", "shoal", v.MetaURL, v.Mountpoint); code != 0 {
		t.Fatalf("mount -t shoal through a copy: exit %d: %s", code, out)
	}
	checkMountedAndUmount(t, v.Mountpoint)
}

// copyFile replaces dst with a copy of src, mode 755.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	_ = os.Remove(dst)
	return os.WriteFile(dst, b, 0o755)
}

func TestMountFstab(t *testing.T) {
	install(t)
	v := testutil.NewVolume(t)
	fstab := filepath.Join(v.Dir, "fstab")
	line := v.MetaURL + " " + v.Mountpoint + " shoal _netdev,noauto,nofail,buffer_size=32M,heartbeat=2s 0 0\n"
	if err := os.WriteFile(fstab, []byte("# test fstab\n"+line), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := system(t, nil, "mount", "--fstab", fstab, v.Mountpoint); code != 0 {
		t.Fatalf("mount --fstab %s %s: exit %d: %s", fstab, v.Mountpoint, code, out)
	}
	checkMountedAndUmount(t, v.Mountpoint)
}

func TestMountOptionErrors(t *testing.T) {
	install(t)
	v := testutil.NewVolume(t)
	cases := []struct {
		opts string
		want string
	}{
		{"no_such_option=1", `unknown mount option "no_such_option"`},
		{"cache-size", `"cache-size" needs a value`},
		{"cache-size=lots", "bad size"},
		{"ro", "read-only mounts are not supported"},
		{"noexec", "noexec is not supported"},
	}
	for _, c := range cases {
		code, out := system(t, nil, "mount", "-t", "shoal", "-o", c.opts, v.MetaURL, v.Mountpoint)
		if code == 0 || !strings.Contains(out, c.want) {
			t.Errorf("mount -o %s: exit %d, output %q; want a failure saying %q", c.opts, code, out, c.want)
		}
		if typ := mountedType(t, v.Mountpoint); typ != "" {
			t.Fatalf("mount -o %s mounted (%s)", c.opts, typ)
		}
	}
	// -s (sloppy): unknown options are ignored.
	if code, out := system(t, nil, "mount", "-s", "-t", "shoal", "-o", "no_such_option=1", v.MetaURL, v.Mountpoint); code != 0 {
		t.Fatalf("mount -s with an unknown option: exit %d: %s", code, out)
	}
	checkMountedAndUmount(t, v.Mountpoint)
}

// TestMountPasswordFile mounts a PostgreSQL volume whose password comes
// from a file named in the options, and refuses one in the URL.
func TestMountPasswordFile(t *testing.T) {
	install(t)
	pwURL := isolate.PGSchemaURL(t, testutil.PGURL(t))
	v := testutil.NewVolumeWith(t, testutil.VolumeConfig{MetaURL: pwURL})
	bare, password := secret.Split(pwURL)
	if password == "" {
		t.Fatalf("the test PostgreSQL URL has no password: %s", secret.Mask(pwURL))
	}
	code, out := system(t, nil, "mount", "-t", "shoal", pwURL, v.Mountpoint)
	if code == 0 || !strings.Contains(out, "meta-password-file=") || strings.Contains(out, ":"+password+"@") {
		t.Fatalf("a password in the fstab URL: exit %d, output %q; want a refusal that names meta-password-file= and hides the password", code, out)
	}
	pwFile := filepath.Join(v.Dir, "pw")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out = system(t, nil, "mount", "-t", "shoal", "-o", "meta-password-file="+pwFile, bare, v.Mountpoint)
	if code == 0 || !strings.Contains(out, "600") {
		t.Fatalf("a password file others can read: exit %d, output %q; want a refusal saying chmod 600", code, out)
	}
	if err := os.Chmod(pwFile, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out := system(t, []string{secret.PasswordEnv + "="}, "mount", "-t", "shoal", "-o", "_netdev,meta-password-file="+pwFile, bare, v.Mountpoint); code != 0 {
		t.Fatalf("mount with meta-password-file: exit %d: %s", code, out)
	}
	checkMountedAndUmount(t, v.Mountpoint)
}
