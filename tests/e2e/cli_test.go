package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"shoal/internal/testutil"
)

// wantFail fails t unless res is a non-zero exit whose stderr mentions
// every one of subs (case-insensitive).
func wantFail(t *testing.T, res testutil.Result, what string, subs ...string) {
	t.Helper()
	if res.Code == 0 {
		t.Errorf("%s: exit 0, want failure\nstdout: %s", what, res.Stdout)
		return
	}
	if res.Code < 0 {
		t.Errorf("%s: did not exit (killed after the time limit)", what)
		return
	}
	msg := strings.ToLower(res.Stderr + res.Stdout)
	for _, s := range subs {
		if !strings.Contains(msg, strings.ToLower(s)) {
			t.Errorf("%s: message does not mention %q:\n%s", what, s, res.Stderr)
		}
	}
}

func TestCLIHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"format", "--help"}, {"mount", "--help"}, {"umount", "--help"}, {"status", "--help"}, {"up", "--help"}} {
		res := testutil.Run(t, args...)
		if res.Code != 0 || !strings.Contains(res.Stdout, "Usage") {
			t.Errorf("shoal %s: exit %d, stdout %q", strings.Join(args, " "), res.Code, res.Stdout)
		}
	}
	wantFail(t, testutil.Run(t, "no-such-command"), "unknown command", "no-such-command")
	wantFail(t, testutil.Run(t, "mount", "--no-such-flag"), "unknown flag", "no-such-flag")
}

func TestCLIFormatErrors(t *testing.T) {
	v := testutil.NewUnformatted(t, "")
	wantFail(t, testutil.Run(t, "format", "nosuchscheme://x/y", "--bucket", v.Bucket), "unknown META-URL scheme", "nosuchscheme")
	wantFail(t, testutil.Run(t, "format", "::not a url::", "--bucket", v.Bucket), "malformed META-URL", "not a url")
	wantFail(t, testutil.Run(t, "format", "sqlite://", "--bucket", v.Bucket), "sqlite URL without a path")
	testutil.MustRun(t, "format", v.MetaURL, "--storage", "file", "--bucket", v.Bucket)
	wantFail(t, testutil.Run(t, "format", v.MetaURL, "--storage", "file", "--bucket", v.Bucket), "format over existing volume", "--force")
	testutil.MustRun(t, "format", v.MetaURL, "--storage", "file", "--bucket", v.Bucket, "--force")
	res := testutil.MustRun(t, "status", v.MetaURL)
	if !strings.Contains(res.Stdout, "test") && !strings.Contains(strings.ToLower(res.Stdout), "inode") {
		t.Logf("status output:\n%s", res.Stdout)
	}
}

func TestCLIMountErrors(t *testing.T) {
	testutil.RequireFUSE(t)
	const limit = 30 * time.Second
	unformatted := testutil.NewUnformatted(t, "")
	wantFail(t, testutil.RunTimeout(t, limit, "mount", unformatted.MetaURL, unformatted.Mountpoint), "mount unformatted", "shoal format")
	wantFail(t, testutil.Run(t, "status", unformatted.MetaURL), "status unformatted", "shoal format")
	if _, err := os.Stat(filepath.Join(unformatted.Dir, "meta.db")); err == nil {
		t.Logf("note: mounting an unformatted sqlite volume created %s", filepath.Join(unformatted.Dir, "meta.db"))
	}

	v := testutil.NewVolume(t)
	wantFail(t, testutil.RunTimeout(t, limit, "mount", "bogus://x", v.Mountpoint), "mount unknown scheme", "bogus")
	missing := filepath.Join(v.Dir, "no-such-dir")
	wantFail(t, testutil.RunTimeout(t, limit, "mount", v.MetaURL, missing), "mount on missing dir", missing)
	m := v.Mount(t)
	wantFail(t, testutil.RunTimeout(t, limit, "mount", v.MetaURL, m.Dir), "mount on mounted dir", "mounted")
	writeFile(t, m.Path("still-works"), []byte("yes"), 0o644)
	wantContent(t, m.Path("still-works"), []byte("yes"))
	m.Unmount(t)
	wantFail(t, testutil.RunTimeout(t, limit, "umount", m.Dir), "umount not mounted", "mounted")
}

// TestSignalsUnmountCleanly stops mounts with SIGTERM and SIGINT right after
// writing: the process must flush, unmount and exit 0, and the data must be
// there on the next mount.
func TestSignalsUnmountCleanly(t *testing.T) {
	testutil.RequireFUSE(t)
	v := testutil.NewVolume(t)
	data := randBytes(61, 9<<20)
	for i, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		m := v.Mount(t)
		name := "sig" + string(rune('0'+i))
		f, err := os.Create(m.Path(name))
		ok(t, err, "create")
		_, err = f.Write(data)
		ok(t, err, "write")
		ok(t, f.Close(), "close")
		if err := m.Signal(t, sig); err != nil {
			t.Errorf("mount exited with %v after %v", err, sig)
		}
		if testutil.IsMounted(m.Dir) {
			t.Errorf("still mounted after %v", sig)
		}
		m = v.Mount(t)
		wantContent(t, m.Path(name), data)
		m.Unmount(t)
	}
}

// TestBackgroundMount checks `shoal mount --background`: it returns 0 only
// once the mount is ready, and `shoal umount` ends it.
func TestBackgroundMount(t *testing.T) {
	testutil.RequireFUSE(t)
	v := testutil.NewVolume(t)
	res := testutil.RunTimeout(t, time.Minute, "mount", "--background", v.MetaURL, v.Mountpoint)
	if res.Code != 0 {
		t.Fatalf("mount --background: exit %d: %s", res.Code, res.Stderr)
	}
	t.Cleanup(func() {
		if testutil.IsMounted(v.Mountpoint) {
			testutil.Run(t, "umount", v.Mountpoint)
		}
	})
	if !testutil.IsMounted(v.Mountpoint) {
		t.Fatal("mount --background returned before the mount was ready")
	}
	writeFile(t, filepath.Join(v.Mountpoint, "bg"), []byte("bg"), 0o644)
	testutil.MustRun(t, "umount", v.Mountpoint)
	if testutil.IsMounted(v.Mountpoint) {
		t.Fatal("still mounted after shoal umount")
	}
	// The daemon must have released the volume: a foreground mount works.
	m := v.Mount(t)
	wantContent(t, m.Path("bg"), []byte("bg"))
	res = testutil.RunTimeout(t, time.Minute, "mount", "--background", v.MetaURL, filepath.Join(v.Dir, "missing"))
	wantFail(t, res, "mount --background on a missing dir", "missing")
}

// TestUp checks `shoal up`: it creates the embedded volume on first use,
// prints where, mounts it, and mounts the same volume the next time.
func TestUp(t *testing.T) {
	testutil.RequireFUSE(t)
	v := testutil.NewUnformatted(t, "")
	data := filepath.Join(v.Dir, "data")
	m := testutil.StartMount(t, v.Mountpoint, filepath.Join(v.Dir, "up.log"), "up", v.Mountpoint, "--data-dir", data)
	writeFile(t, m.Path("hello"), []byte("hello"), 0o644)
	if !strings.Contains(m.LogText(), data) {
		t.Errorf("shoal up did not print its data dir %s:\n%s", data, m.LogText())
	}
	m = m.Remount(t)
	wantContent(t, m.Path("hello"), []byte("hello"))
	m.Unmount(t)
	if ents, _ := os.ReadDir(data); len(ents) == 0 {
		t.Errorf("data dir %s is empty", data)
	}
}

// TestMountNoPermission runs `shoal mount` as an unprivileged user on a
// mountpoint it may not use: it must fail clearly, not hang or mount.
func TestMountNoPermission(t *testing.T) {
	testutil.RequireFUSE(t)
	v := testutil.NewVolume(t)
	ok(t, filepath.WalkDir(v.Dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil || p == v.Mountpoint {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	}), "chown volume to nobody")
	cmd := exec.Command(testutil.Binary(t), "mount", v.MetaURL, v.Mountpoint)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: testutil.Nobody}
	out, err := runWithTimeout(cmd, 30*time.Second)
	if err == nil {
		t.Errorf("mount as nobody on root's mountpoint succeeded:\n%s", out)
	}
	if testutil.IsMounted(v.Mountpoint) {
		t.Error("mounted anyway")
		testutil.Run(t, "umount", v.Mountpoint)
	}
	low := strings.ToLower(out)
	if !strings.Contains(low, "permission") && !strings.Contains(low, "access") && !strings.Contains(low, "allow_other") {
		t.Errorf("message does not say what is not permitted:\n%s", out)
	}
	t.Logf("as nobody: %v: %s", err, out)
}

// runWithTimeout runs cmd, killing it after limit; it returns the combined
// output and the error (a timeout is an error too).
func runWithTimeout(cmd *exec.Cmd, limit time.Duration) (string, error) {
	var buf strings.Builder
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return buf.String(), err
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-done
		return buf.String(), fmt.Errorf("no exit within %v", limit)
	}
}

// TestMountNoDevFuse hides /dev/fuse in a private mount namespace and
// checks that `shoal mount` fails at once and says what to install.
func TestMountNoDevFuse(t *testing.T) {
	testutil.RequireFUSE(t)
	unshare := requireTool(t, "unshare")
	v := testutil.NewVolume(t)
	script := `mount -t tmpfs none /dev && exec "$0" mount "$1" "$2"`
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", "sh", "-c", script, testutil.Binary(t), v.MetaURL, v.Mountpoint)
	out, err := runWithTimeout(cmd, 30*time.Second)
	if err == nil {
		t.Fatalf("mount without /dev/fuse succeeded:\n%s", out)
	}
	if !strings.Contains(out, "/dev/fuse") || !strings.Contains(out, "fuse3") {
		t.Errorf("message should name /dev/fuse and the fuse3 package:\n%s", out)
	}
}
