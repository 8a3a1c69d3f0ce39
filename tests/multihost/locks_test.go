package multihost

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"shoal/internal/testutil"
)

// blockedFor is how long a blocking lock request must stay unanswered to
// count as blocked.
const blockedFor = 700 * time.Millisecond

// releaseLimit bounds how long a released lock may take to become free on
// another mount.
const releaseLimit = 10 * time.Second

// TestFlockAcrossMounts: flock(2) shared and exclusive locks taken through
// one mount exclude processes on the others, a blocked LOCK_EX waits for the
// unlock, and a lock goes away with close and with kill -9 of its holder.
func TestFlockAcrossMounts(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ms := mountN(t, b.newVolume(t), 2)
		a := startLocker(t, "a", ms[0].Path("f"))
		b1 := startLocker(t, "b1", ms[1].Path("f"))
		b2 := startLocker(t, "b2", ms[1].Path("f"))

		a.must("flock ex nb", "OK")
		b1.must("flock ex nb", "EAGAIN")
		b1.must("flock sh nb", "EAGAIN")
		a.must("flock un", "OK")
		b1.must("flock sh nb", "OK")
		b2.must("flock sh nb", "OK") // shared with a shared lock on the same mount
		a.must("flock sh nb", "OK")  // and on the other
		a.must("flock ex nb", "EAGAIN")
		b1.must("flock un", "OK")
		b2.must("flock un", "OK")
		a.must("flock ex nb", "OK") // upgrade once alone

		// A blocking request waits for the unlock on the other mount.
		b1.send("flock ex")
		wantBlocked(t, b1, "flock ex")
		a.must("flock un", "OK")
		wantReply(t, b1, "flock ex", "OK")

		// Released by close.
		a.must("flock ex nb", "EAGAIN")
		b1.must("close", "OK")
		waitLock(t, a, "flock ex nb", "after the holder closed its file")

		// Released by kill -9 of the holding process.
		b1 = startLocker(t, "b1 again", ms[1].Path("f"))
		b1.must("flock ex nb", "EAGAIN")
		a.kill9()
		waitLock(t, b1, "flock ex nb", "after the holder was killed")
	})
}

// TestFcntlAcrossMounts: POSIX byte-range locks (F_SETLK, F_SETLKW,
// F_GETLK) conflict across mounts only where ranges overlap, F_GETLK names
// the holder's pid and range, and locks go away with unlock, close and
// kill -9 of the holder.
func TestFcntlAcrossMounts(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ms := mountN(t, b.newVolume(t), 2)
		a := startLocker(t, "a", ms[0].Path("f"))
		b1 := startLocker(t, "b1", ms[1].Path("f"))

		a.must("setlk wr 0 100", "OK")
		b1.must("setlk wr 50 10", "EAGAIN")
		b1.must("setlk rd 99 1", "EAGAIN")
		b1.must("setlk wr 100 10", "OK") // adjacent, not overlapping
		b1.must("getlk wr 0 100", fmt.Sprintf("WRLCK %d 0 100", a.pid))
		a.must("getlk rd 105 1", fmt.Sprintf("WRLCK %d 100 10", b1.pid))

		// Read locks share; a write lock does not.
		a.must("setlk rd 200 10", "OK")
		b1.must("setlk rd 200 10", "OK")
		b1.must("setlk wr 200 10", "EAGAIN")
		a.must("setlk un 200 10", "OK")
		b1.must("setlk wr 200 10", "OK") // upgrade now that a is gone

		// F_SETLKW waits for the conflicting range to be unlocked.
		b1.send("setlkw wr 0 10")
		wantBlocked(t, b1, "setlkw wr 0 10")
		a.must("setlk un 0 50", "OK") // frees [0,50), keeps [50,100)
		wantReply(t, b1, "setlkw wr 0 10", "OK")
		b1.must("setlk wr 60 1", "EAGAIN")

		// Released by close: every lock of the process on the file.
		a.must("setlk wr 0 1", "EAGAIN")
		b1.must("close", "OK")
		waitLock(t, a, "setlk wr 0 1000", "after the holder closed its file")

		// Released by kill -9 of the holding process.
		b1 = startLocker(t, "b1 again", ms[1].Path("f"))
		b1.must("setlk wr 500 1", "EAGAIN")
		a.kill9()
		waitLock(t, b1, "setlk wr 0 1000", "after the holder was killed")
	})
}

// TestLocksReleasedOnSessionExpiry: a mount is killed with SIGKILL while a
// process on it holds a flock and an fcntl lock. The survivors (short
// --heartbeat and --session-timeout) reclaim its session: the locks become
// free within a few seconds without any manual step, and the dead mount
// disappears from `shoal status`.
func TestLocksReleasedOnSessionExpiry(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		v := b.newVolume(t)
		ms := mountN(t, v, 2, fastSessions...)
		if got := sessionMounts(t, v); len(got) != 2 {
			t.Fatalf("shoal status lists mounts %q, want 2", got)
		}
		f := startLocker(t, "doomed flock", ms[0].Path("f"))
		g := startLocker(t, "doomed fcntl", ms[0].Path("g"))
		f.must("flock ex nb", "OK")
		g.must("setlk wr 0 10", "OK")
		bf := startLocker(t, "survivor flock", ms[1].Path("f"))
		bg := startLocker(t, "survivor fcntl", ms[1].Path("g"))

		ms[0].Kill9(t) // the machine dies: mount first, its processes after
		f.kill9()
		g.kill9()
		killed := time.Now()
		bf.must("flock ex nb", "EAGAIN") // still held by the dead session
		waitLock(t, bf, "flock ex nb", "after the mount's session expired")
		waitLock(t, bg, "setlk wr 0 10", "after the mount's session expired")
		t.Logf("locks of the killed mount free after %v (session timeout 3s)", time.Since(killed).Round(time.Millisecond))
		got := sessionMounts(t, v)
		if len(got) != 1 || got[0] != ms[1].Dir {
			t.Errorf("after expiry shoal status lists mounts %q, want only %s", got, ms[1].Dir)
		}
	})
}

// wantBlocked fails t if l answers within blockedFor.
func wantBlocked(t *testing.T, l *locker, what string) {
	t.Helper()
	if r, ok := l.reply(blockedFor); ok {
		t.Fatalf("locker %s: %q answered %q at once, want it to block", l.name, what, r)
	}
}

// wantReply waits for l's answer to an earlier send.
func wantReply(t *testing.T, l *locker, what, want string) {
	t.Helper()
	r, ok := l.reply(releaseLimit)
	if !ok || r != want {
		t.Fatalf("locker %s: %q answered %q (answered: %v) within %v, want %q", l.name, what, r, ok, releaseLimit, want)
	}
}

// waitLock retries a non-blocking lock command until it succeeds, failing t
// after releaseLimit.
func waitLock(t *testing.T, l *locker, cmd, when string) {
	t.Helper()
	start := time.Now()
	for {
		r := l.do(cmd)
		if r == "OK" {
			t.Logf("%s: %q succeeded %v %s", l.name, cmd, time.Since(start).Round(time.Millisecond), when)
			return
		}
		if r != "EAGAIN" || time.Since(start) > releaseLimit {
			t.Fatalf("locker %s: %q still answers %q %v %s", l.name, cmd, r, time.Since(start).Round(time.Millisecond), when)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sessionMounts returns the mountpoints `shoal status --json` lists.
func sessionMounts(t *testing.T, v *testutil.Volume) []string {
	t.Helper()
	res := testutil.MustRun(t, "status", v.MetaURL, "--json")
	var st struct {
		Sessions []struct {
			Mountpoint string `json:"mountpoint"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &st); err != nil {
		t.Fatalf("shoal status --json: %v\n%s", err, res.Stdout)
	}
	var out []string
	for _, s := range st.Sessions {
		out = append(out, s.Mountpoint)
	}
	if out == nil && !strings.Contains(res.Stdout, `"sessions"`) {
		t.Fatalf("shoal status --json has no sessions field:\n%s", res.Stdout)
	}
	return out
}
