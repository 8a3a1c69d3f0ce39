package multihost

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"shoal/internal/meta/kv/kvtest"
	"shoal/internal/testutil"
	"shoal/internal/volume"
	"shoal/tests/isolate"
)

// Sessions of TestLockSafetyEngineOutage: A's own timeout is long, B's
// short, so a reclaim judged by B's timeout would end A's session early.
// A's lease is 12s − max(300ms, 3s) = 9s.
var (
	longSession  = []string{"--heartbeat", "300ms", "--session-timeout", "12s"}
	shortSession = []string{"--heartbeat", "200ms", "--session-timeout", "4s"}
)

// TestLockSafetyEngineOutage: a lock never has two holders. Mount A (12s
// session, reaching a dedicated Redis through a proxy the test can cut)
// takes an exclusive flock and keeps writing and fsyncing through the
// locked descriptor; mount B (4s session, its clock an hour fast) keeps
// trying to take the same lock.
//
//  1. A is cut off for 6s: longer than B's timeout, shorter than A's
//     lease. B never gets the lock; A's writes work again afterwards.
//  2. A is cut off and Redis stopped for 14s (longer than A's timeout),
//     then Redis restarts while A stays cut off. B reclaims A's session
//     and gets the lock; then A is reconnected. From the moment B asked
//     for the lock on, no write of A may succeed: A fenced itself when its
//     lease ran out, and its descriptor stays failed after it learns its
//     session was reclaimed (checked on writes sent after A logged that).
//     The file ends with B's data.
func TestLockSafetyEngineOutage(t *testing.T) {
	requireServers(t)
	testutil.RequireFUSE(t)
	r := startRedis(t, "127.0.0.1")
	url := isolate.RedisNamespaceURL(t, r.url())
	v := testutil.NewVolumeWith(t, testutil.VolumeConfig{MetaURL: url})
	proxy := kvtest.NewProxy(t, r.addr())
	ma := mountVia(t, v, "a", strings.Replace(url, r.addr(), proxy.Addr(), 1), longSession...)
	t.Setenv(volume.ClockSkewEnv, "1h")
	mb := mountVia(t, v, "b", url, shortSession...)
	os.Unsetenv(volume.ClockSkewEnv)

	a := startLocker(t, "a", ma.Path("disk.img"))
	b := startLocker(t, "b", mb.Path("disk.img"))
	a.must("flock ex nb", "OK")
	w := startWrites(t, a)
	b.must("flock ex nb", "EAGAIN")

	// 1. A silent for longer than B's timeout, within its own lease.
	proxy.Down()
	stillLocked(t, b, 6*time.Second)
	proxy.Up()
	w.waitOK(t, time.Now(), 10*time.Second, "after A was reconnected within its lease")
	b.must("flock ex nb", "EAGAIN")

	// 2. An outage longer than A's timeout; A reconnects last.
	proxy.Down()
	r.restart(t, syscall.SIGTERM, 14*time.Second)
	asked := time.Now()
	waitLock(t, b, "flock ex nb", "after the outage")
	for i := range 5 {
		b.must(fmt.Sprintf("write B %d", i), "OK")
	}
	proxy.Up()
	if _, err := eventually(15*time.Second, func() error {
		if !strings.Contains(ma.LogText(), "reclaimed by another client") {
			return fmt.Errorf("mount A has not logged that its session was reclaimed")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	w.waitSent(t, time.Now(), 3, 15*time.Second, "after A learned its session was reclaimed")
	w.stop()
	if bad := w.okAfter(asked); len(bad) > 0 {
		t.Fatalf("two holders: A's writes succeeded after B asked for the lock (%v): %v", asked.Format("15:04:05.000"), bad)
	}
	b.must("write B last", "OK")
	wantContent(t, mb.Path("disk.img"), []byte("B last\n"))
	if log := ma.LogText(); !strings.Contains(log, "LOCKS LOST") || !strings.Contains(log, "LOCKS SUSPENDED") {
		t.Errorf("mount A did not say loudly that its locks were suspended and lost; log:\n%s", tail(log, 4000))
	}
}

// mountVia mounts v at v.Dir/mnt-name through metaURL (the same volume,
// reached another way).
func mountVia(t *testing.T, v *testutil.Volume, name, metaURL string, extra ...string) *testutil.Mount {
	t.Helper()
	dir := filepath.Join(v.Dir, "mnt-"+name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"mount", metaURL, dir}, extra...)
	return testutil.StartMount(t, dir, filepath.Join(v.Dir, "mount-"+name+".log"), args...)
}

// stillLocked has l try the exclusive lock for d and fails t if it ever
// gets it.
func stillLocked(t *testing.T, l *locker, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if r := l.do("flock ex nb"); r != "EAGAIN" {
			t.Fatalf("locker %s: flock ex nb answered %q while the holder was only cut off within its lease", l.name, r)
		}
	}
}

// writes is a monitor of one locker writing in a loop: each write's
// answer, with when it was sent and when it came back.
type writes struct {
	l    *locker
	mu   sync.Mutex
	log  []writeResult
	halt chan struct{}
	done chan struct{}
}

type writeResult struct {
	n          int
	sent, back time.Time
	reply      string
}

func (r writeResult) String() string {
	return fmt.Sprintf("#%d sent %s back %s: %s", r.n, r.sent.Format("15:04:05.000"), r.back.Format("15:04:05.000"), r.reply)
}

// startWrites makes l write "A n" and fsync, again and again, until stop.
func startWrites(t *testing.T, l *locker) *writes {
	w := &writes{l: l, halt: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	t.Cleanup(w.stop)
	return w
}

func (w *writes) run() {
	defer close(w.done)
	for n := 0; ; n++ {
		select {
		case <-w.halt:
			return
		default:
		}
		sent := time.Now()
		w.l.send(fmt.Sprintf("write A %d", n))
		reply, ok := w.l.reply(2 * time.Minute)
		if !ok {
			reply = "NO ANSWER"
		}
		w.mu.Lock()
		w.log = append(w.log, writeResult{n, sent, time.Now(), reply})
		w.mu.Unlock()
		if !ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the loop after the write in flight.
func (w *writes) stop() {
	select {
	case <-w.halt:
	default:
		close(w.halt)
	}
	<-w.done
}

// waitOK waits until a write sent after since succeeds.
func (w *writes) waitOK(t *testing.T, since time.Time, limit time.Duration, when string) {
	t.Helper()
	w.wait(t, limit, when, "a successful write", 1, func(r writeResult) bool { return r.reply == "OK" && r.sent.After(since) })
}

// waitSent waits until n writes sent after since have answered.
func (w *writes) waitSent(t *testing.T, since time.Time, n int, limit time.Duration, when string) {
	t.Helper()
	w.wait(t, limit, when, fmt.Sprintf("%d answers", n), n, func(r writeResult) bool { return r.sent.After(since) })
}

// wait waits until n writes match.
func (w *writes) wait(t *testing.T, limit time.Duration, when, what string, n int, match func(writeResult) bool) {
	t.Helper()
	_, err := eventually(limit, func() error {
		w.mu.Lock()
		defer w.mu.Unlock()
		got := 0
		for _, r := range w.log {
			if match(r) {
				got++
			}
		}
		if got < n {
			return fmt.Errorf("no %s", what)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("writes through A's locked descriptor %s: %v within %v; last: %v", when, err, limit, w.last(5))
	}
}

// okAfter lists the writes that succeeded with an answer after t.
func (w *writes) okAfter(t time.Time) []writeResult {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []writeResult
	for _, r := range w.log {
		if r.reply == "OK" && r.back.After(t) {
			out = append(out, r)
		}
	}
	return out
}

func (w *writes) last(n int) []writeResult {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.log[max(0, len(w.log)-n):]
}
