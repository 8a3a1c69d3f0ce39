package secrets

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"shoal/internal/rundir"
	"shoal/internal/testutil"
	"shoal/internal/volume"
	"shoal/tests/isolate"
)

// TestNoSecretShows runs every command on a PostgreSQL+S3 volume whose
// engine password is given in the URL, the environment and a file, and
// searches everything they print, log, store and dump, and what ps shows
// of the mounts, for the engine password and the S3 secret key.
func TestNoSecretShows(t *testing.T) {
	testutil.RequireFUSE(t)
	s3Secret := os.Getenv("AWS_SECRET_ACCESS_KEY")
	s3Key := os.Getenv("AWS_ACCESS_KEY_ID")
	if s3Secret == "" || s3Key == "" {
		t.Fatal("the test S3 credentials are not in the environment (source /tmp/svc/env.sh)")
	}
	testutil.PGURL(t) // skips (or fails, with SHOAL_REQUIRE_SERVICES) without the test services
	bare, password := pgRole(t, passwordPostgres(t))
	pwURL := withPassword(t, bare, password)
	bucket := isolate.S3Prefix(t, testutil.S3URL(t))
	credBucket := strings.Replace(bucket, "://", "://"+s3Key+":"+s3Secret+"@", 1)
	wrong := "WrongPw" + randomHex(12)
	dir := t.TempDir()
	var ev evidence
	defer ev.check(t, password, s3Secret, wrong) // also after a fatal step

	formatAndMount(t, &ev, pwURL, bucket, credBucket, dir)
	everyCommand(t, &ev, bare, pwURL, password, credBucket, wrong, dir)
	storedSettings(t, &ev, pwURL)
	legacySettings(t, &ev, pwURL, credBucket, dir)
}

// formatAndMount formats (refusing credentials in the bucket URL), mounts
// in the background, writes a file and unmounts.
func formatAndMount(t *testing.T, ev *evidence, pwURL, bucket, credBucket, dir string) {
	res := ev.shoal(t, nil, "format", pwURL, "--storage", "s3", "--bucket", credBucket)
	if res.Code == 0 || !strings.Contains(res.Stderr, "AWS_ACCESS_KEY_ID") {
		t.Errorf("format with credentials in the bucket URL: exit %d, stderr %q; want a refusal that says where credentials go", res.Code, res.Stderr)
	}
	ev.must(t, nil, "format", pwURL, "--storage", "s3", "--bucket", bucket, "--force")
	mp := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "background.log")
	res = ev.must(t, nil, "mount", "--background", "--log", log, pwURL, mp)
	m := regexp.MustCompile(`pid (\d+)`).FindStringSubmatch(res.Stdout)
	if m == nil {
		t.Fatalf("mount --background printed no pid: %q", res.Stdout)
	}
	var pid int
	fmt.Sscan(m[1], &pid)
	ev.addProc(t, "background mount", pid)
	ev.addProc(t, "background mount's server", serverPID(t, mp))
	if err := os.WriteFile(filepath.Join(mp, "f"), []byte("data"), 0o644); err != nil {
		t.Errorf("write through the mount: %v", err)
	}
	ev.must(t, nil, "status", pwURL)
	ev.must(t, nil, "umount", mp)
	ev.addFile(t, "background mount log", log)
}

// everyCommand runs status, dump, load, fsck and gc, and the password's
// other sources (environment, file), including their error paths.
func everyCommand(t *testing.T, ev *evidence, bare, pwURL, password, credBucket, wrong, dir string) {
	ev.must(t, nil, "status", pwURL)
	ev.must(t, nil, "status", "--json", pwURL)
	dump := filepath.Join(dir, "vol.dump")
	ev.must(t, nil, "dump", pwURL, dump)
	ev.addDump(t, "dump file", dump)
	ev.must(t, nil, "dump", pwURL, "-")
	ev.shoal(t, nil, "load", pwURL, dump) // refused: the engine holds a volume
	ev.shoal(t, nil, "load", "--storage", "s3", "--bucket", credBucket, "sqlite://"+filepath.Join(dir, "new.db"), "latest")
	ev.must(t, nil, "fsck", pwURL)
	ev.must(t, nil, "gc", "--dry-run", pwURL)
	if res := ev.shoal(t, nil, "status", withPassword(t, bare, wrong)); res.Code == 0 {
		t.Errorf("status with a wrong password succeeded")
	} else if !strings.Contains(res.Stderr, "check the user and password") || strings.Contains(res.Stderr, "sqlkv:") {
		t.Errorf("status with a wrong password: %q; want one message that says to check the password, without internal names", res.Stderr)
	}
	if res := ev.shoal(t, []string{"SHOAL_META_PASSWORD=" + password}, "status", bare); res.Code != 0 {
		t.Errorf("status with the password in SHOAL_META_PASSWORD: exit %d\n%s", res.Code, res.Stderr)
	}
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := ev.shoal(t, nil, "status", "--meta-password-file", pwFile, bare)
	if res.Code == 0 || !strings.Contains(res.Stderr, "chmod 600") {
		t.Errorf("a password file readable by others: exit %d, stderr %q; want a refusal naming chmod 600", res.Code, res.Stderr)
	}
	if err := os.Chmod(pwFile, 0o600); err != nil {
		t.Fatal(err)
	}
	if res := ev.shoal(t, nil, "status", "--meta-password-file", pwFile, bare); res.Code != 0 {
		t.Errorf("status with a password file: exit %d\n%s", res.Code, res.Stderr)
	}
	// A foreground mount given the password in its URL masks its argv.
	mp := filepath.Join(dir, "fg")
	if err := os.Mkdir(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	m := testutil.StartMount(t, mp, filepath.Join(dir, "fg.log"), "mount", pwURL, mp)
	ev.addProc(t, "foreground mount", m.PID())
	ev.addProc(t, "foreground mount's server", m.WaitServerPID(t))
	m.Unmount(t)
	ev.addFile(t, "foreground mount log", m.Log)
}

// storedSettings adds the raw settings the engine holds.
func storedSettings(t *testing.T, ev *evidence, pwURL string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	eng, err := volume.OpenEngine(ctx, pwURL)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	f, err := eng.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ev.add("stored settings", fmt.Sprintf("%+v", f))
}

// legacySettings stores credentials in the bucket URL, as old versions
// did, and checks that status, dumps and mounts leave them out, and that
// the mount still works (with the credentials of its environment).
func legacySettings(t *testing.T, ev *evidence, pwURL, credBucket, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	eng, err := volume.OpenEngine(ctx, pwURL)
	if err != nil {
		t.Fatal(err)
	}
	f, err := eng.Load(ctx)
	if err == nil {
		f.Bucket = credBucket
		err = eng.Format(ctx, f, true)
	}
	eng.Close()
	if err != nil {
		t.Fatal(err)
	}
	ev.must(t, nil, "status", pwURL)
	ev.must(t, nil, "status", "--json", pwURL)
	dump := filepath.Join(dir, "legacy.dump")
	ev.must(t, nil, "dump", pwURL, dump)
	ev.addDump(t, "legacy dump file", dump)
	mp := filepath.Join(dir, "legacy")
	if err := os.Mkdir(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	m := testutil.StartMount(t, mp, filepath.Join(dir, "legacy.log"), "mount", pwURL, mp)
	if b, err := os.ReadFile(filepath.Join(mp, "f")); err != nil || string(b) != "data" {
		t.Errorf("read through the legacy volume's mount: %q, %v", b, err)
	}
	m.Unmount(t)
	log := m.LogText()
	ev.add("legacy mount log", log)
	if !strings.Contains(log, "credentials in the bucket URL") {
		t.Errorf("the mount of a volume with credentials in its settings did not say so in its log:\n%s", log)
	}
}

// serverPID is the pid of the process serving the mount at mp (under
// its supervisor), from its pid file.
func serverPID(t *testing.T, mp string) int {
	t.Helper()
	b, err := os.ReadFile(rundir.Path(mp, ".pid"))
	if err != nil {
		t.Fatalf("server pid of %s: %v", mp, err)
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	return pid
}
