package console

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shoal/internal/testutil"
	"shoal/tests/isolate"
)

// Mounts heartbeat every second and die 4 s after their last heartbeat,
// so that a new mount, and a dead one, show within seconds.
var fastSession = []string{"--heartbeat", "1s", "--session-timeout", "4s"}

// TestConsole runs the console against the embedded engine and a shared
// one: the page loads in Chromium, its figures match `status --json`,
// a second mount appears within seconds of mounting and leaves after
// unmounting, maintenance runs and benchmark reports show, and the write
// action needs the token.
func TestConsole(t *testing.T) {
	testutil.RequireFUSE(t)
	engines := []struct {
		name    string
		metaURL func(t *testing.T) string
	}{
		{"sqlite", func(*testing.T) string { return "" }},
		{"redis", func(t *testing.T) string { return isolate.RedisNamespaceURL(t, testutil.RedisURL(t)) }},
	}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			v := testutil.NewVolumeWith(t, testutil.VolumeConfig{MetaURL: e.metaURL(t)})
			testConsole(t, v)
		})
	}
}

func testConsole(t *testing.T, v *testutil.Volume) {
	token, tokenFile := "s3cr3t-console-token", filepath.Join(v.Dir, "token")
	reports := filepath.Join(v.Dir, "reports")
	must(t, os.WriteFile(tokenFile, []byte(token+"\n"), 0o600))
	must(t, os.Mkdir(reports, 0o755))
	must(t, os.WriteFile(filepath.Join(reports, "nightly.html"), []byte("<html><body>bench report</body></html>"), 0o644))
	url := startConsole(t, v.MetaURL, "--token-file", tokenFile, "--reports", reports)
	checkReadOnly(t, startConsole(t, v.MetaURL), token)

	m1 := v.Mount(t, append([]string{"--console", "127.0.0.1:0"}, fastSession...)...)
	for i := range 20 {
		must(t, os.WriteFile(m1.Path(fmt.Sprintf("f%d", i)), make([]byte, 10_000+i), 0o644))
	}
	waitForLock(t, m1.Path("f0"), 300*time.Millisecond)
	time.Sleep(2500 * time.Millisecond) // the mount's usage counters reach the engine about once a second
	checkMatchesStatus(t, url, v.MetaURL)
	// The mount serves the same console.
	mountURL := mountConsoleURL(t, m1)
	if p, q := parsePage(t, dumpDOM(t, mountURL)), parsePage(t, dumpDOM(t, url)); p.usedInodes != q.usedInodes || !slices.Equal(p.sessions, q.sessions) {
		t.Errorf("the mount's console shows %d inodes, mounts %v; shoal console %d, %v", p.usedInodes, p.sessions, q.usedInodes, q.sessions)
	}
	// The mount publishes its operations with its heartbeats: the 20
	// creates and writes are in its report by now, and the lock wait is
	// its slowest operation.
	p := parsePage(t, dumpDOM(t, url))
	if len(p.ops) != 1 || p.ops[0] < 40 {
		t.Errorf("the mount's report shows %v operations, want one report of at least 40", p.ops)
	}
	if d := p.slow["setlkw"]; d < 300*time.Millisecond || d > time.Minute {
		t.Errorf("slow operations shown: %v; want the lock wait (setlkw) of at least 300 ms", p.slow)
	}

	second := filepath.Join(v.Dir, "mnt2")
	must(t, os.Mkdir(second, 0o755))
	m2 := v.MountAt(t, second, fastSession...)
	mounted := time.Now()
	p, ok := waitPage(t, url, 10*time.Second, func(p page) bool { return slices.Contains(p.mountpoints, second) })
	if !ok {
		t.Fatalf("the second mount did not appear on the page within 10 s; mounts shown: %v", p.mountpoints)
	}
	t.Logf("the second mount appeared on the page %v after mounting", time.Since(mounted).Round(time.Millisecond))
	checkMatchesStatus(t, url, v.MetaURL)
	checkRows(t, url, v.MetaURL)

	testutil.MustRun(t, "gc", "--dry-run", v.MetaURL)
	p = parsePage(t, dumpDOM(t, url))
	if !slices.Contains(p.jobs, "gc") || !strings.Contains(p.dom, "dry run") {
		t.Errorf("the page does not show the gc run: jobs %v", p.jobs)
	}
	if !strings.Contains(p.dom, `href="/reports/nightly.html"`) {
		t.Errorf("the page does not link the benchmark report")
	}
	if body := get(t, url+"reports/nightly.html"); !strings.Contains(body, "bench report") {
		t.Errorf("the console does not serve the report: %q", body)
	}
	if strings.Contains(p.dom, token) {
		t.Errorf("the page shows the token")
	}

	m2.Unmount(t)
	p, ok = waitPage(t, url, 5*time.Second, func(p page) bool { return !slices.Contains(p.mountpoints, second) })
	if !ok || p.mountCount != 1 {
		t.Fatalf("after unmounting, the page still shows %d mounts: %v", p.mountCount, p.mountpoints)
	}
	checkReclaim(t, v, url, token, m1)
}

// waitForLock makes one slow operation on the mount: a blocking flock
// that waits hold for another descriptor's lock.
func waitForLock(t *testing.T, path string, hold time.Duration) {
	t.Helper()
	holder, err := os.Open(path)
	must(t, err)
	defer holder.Close()
	waiter, err := os.Open(path)
	must(t, err)
	defer waiter.Close()
	must(t, unix.Flock(int(holder.Fd()), unix.LOCK_EX))
	got := make(chan error, 1)
	go func() { got <- unix.Flock(int(waiter.Fd()), unix.LOCK_EX) }()
	time.Sleep(hold)
	must(t, unix.Flock(int(holder.Fd()), unix.LOCK_UN))
	must(t, <-got)
}

// checkMatchesStatus compares the page's figures with `status --json`
// read just before and just after it (the same figures both times, so
// nothing moved between).
func checkMatchesStatus(t *testing.T, url, metaURL string) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		space, inodes, sessions := statusFigures(t, metaURL)
		p := parsePage(t, dumpDOM(t, url))
		space2, inodes2, sessions2 := statusFigures(t, metaURL)
		if space != space2 || inodes != inodes2 || !slices.Equal(sessions, sessions2) {
			if attempt < 5 {
				continue // a flush landed between the reads
			}
			t.Fatalf("status --json keeps changing: %d/%d/%v then %d/%d/%v", space, inodes, sessions, space2, inodes2, sessions2)
		}
		if p.usedSpace != space || p.usedInodes != inodes || p.mountCount != uint64(len(sessions)) || !slices.Equal(p.sessions, sessions) {
			t.Fatalf("the page shows space %d, inodes %d, %d mounts %v; status --json says %d, %d, %v",
				p.usedSpace, p.usedInodes, p.mountCount, p.sessions, space, inodes, sessions)
		}
		if inodes < 21 || space < 20*10_000 {
			t.Fatalf("status --json shows too little: %d bytes, %d inodes", space, inodes)
		}
		return
	}
}

// checkReclaim crashes the last mount and reclaims its session through
// the console: refused without the token, done with it.
func checkReclaim(t *testing.T, v *testutil.Volume, url, token string, m *testutil.Mount) {
	t.Helper()
	m.Kill9(t)
	p, ok := waitPage(t, url, 10*time.Second, func(p page) bool { return strings.Contains(p.dom, "dead: silent") })
	if !ok {
		t.Fatalf("the crashed mount is not shown dead: %v", p.mountpoints)
	}
	if code, body := post(t, url+"action/reclaim", ""); code != 403 {
		t.Fatalf("reclaim without the token: %d %s, want 403", code, body)
	}
	if code, body := post(t, url+"action/reclaim", "wrong"); code != 403 {
		t.Fatalf("reclaim with a wrong token: %d %s, want 403", code, body)
	}
	code, body := post(t, url+"action/reclaim", token)
	if code != 200 || !strings.Contains(body, `"reclaimed":1`) {
		t.Fatalf("reclaim with the token: %d %s, want 200 and one session reclaimed", code, body)
	}
	if p := parsePage(t, dumpDOM(t, url)); p.mountCount != 0 {
		t.Fatalf("after the reclaim the page shows %d mounts", p.mountCount)
	}
	if _, _, sessions := statusFigures(t, v.MetaURL); len(sessions) != 0 {
		t.Fatalf("after the reclaim status --json lists sessions %v", sessions)
	}
}

// checkReadOnly checks that a console without a token offers no action
// and refuses one, whatever token a request carries.
func checkReadOnly(t *testing.T, url, token string) {
	t.Helper()
	if p := parsePage(t, dumpDOM(t, url)); strings.Contains(p.dom, "action/reclaim") {
		t.Errorf("a read-only console offers the reclaim action")
	}
	if code, body := post(t, url+"action/reclaim", token); code != 403 {
		t.Errorf("reclaim on a read-only console: %d %s, want 403", code, body)
	}
}

// mountConsoleURL is where a mount started with --console serves it, as
// its log says.
func mountConsoleURL(t *testing.T, m *testutil.Mount) string {
	t.Helper()
	found := regexp.MustCompile(`web console listening" addr=(http://[0-9.:]+/)`).FindStringSubmatch(m.LogText())
	if found == nil {
		t.Fatalf("the mount does not log its console's address:\n%s", m.LogText())
	}
	return found[1]
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
