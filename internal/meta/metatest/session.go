package metatest

import (
	"errors"
	"testing"
	"time"

	"shoal/internal/meta"
)

// SkewedClientsFactory returns one engine per entry of skews over one
// empty store, as mounts on machines whose wall clocks are off by that
// much (the engine's test hook for a skewed clock).
type SkewedClientsFactory func(t *testing.T, skews []time.Duration) []meta.Engine

// RunClock runs the part of the suite about clocks: sessions are timed on
// the engine's clock, so a client whose clock is off neither has its
// session reclaimed early nor reclaims another's early.
func RunClock(t *testing.T, newClients SkewedClientsFactory) {
	t.Run("EngineClock", func(t *testing.T) { testEngineClock(t, newClients) })
}

// sessionsOf returns the Sessions of every client, skipping t for an
// engine without them.
func sessionsOf(t *testing.T, cs []*env) []meta.Sessions {
	t.Helper()
	out := make([]meta.Sessions, len(cs))
	for i, c := range cs {
		s, ok := c.e.(meta.Sessions)
		if !ok {
			t.Skip("engine has no Sessions")
		}
		out[i] = s
	}
	return out
}

// wantReclaimed has s reclaim with fallback and fails t unless it ended
// want sessions.
func (v *env) wantReclaimed(s meta.Sessions, fallback time.Duration, want int, what string) {
	v.t.Helper()
	n, err := s.ReclaimSessions(v.ctx, fallback)
	v.check(err, "reclaim")
	if n != want {
		v.t.Fatalf("%s: reclaimed %d sessions, want %d", what, n, want)
	}
}

// testSessionTimeouts: a session is judged by its own timeout, never by
// the reclaiming client's; a record without one gets at least
// meta.LegacySessionTimeout.
func testSessionTimeouts(t *testing.T, newClients ClientsFactory) {
	cs := clients(t, newClients, 4)
	ss := sessionsOf(t, cs)
	long, short, legacy, reclaimer := cs[0], cs[1], cs[2], cs[3]
	_, err := ss[0].BeginSession(long.ctx, meta.SessionInfo{Host: "long", Timeout: time.Hour, Interval: time.Minute})
	long.check(err, "begin long session")
	_, err = ss[1].BeginSession(short.ctx, meta.SessionInfo{Host: "short", Timeout: time.Second})
	short.check(err, "begin short session")
	_, err = ss[2].BeginSession(legacy.ctx, meta.SessionInfo{Host: "legacy"})
	legacy.check(err, "begin session without a timeout")
	_, err = ss[3].BeginSession(reclaimer.ctx, meta.SessionInfo{Host: "reclaimer", Timeout: 10 * time.Millisecond})
	reclaimer.check(err, "begin reclaimer's session")
	list, err := ss[3].ListSessions(reclaimer.ctx)
	reclaimer.check(err, "list sessions")
	if list[0].Timeout != time.Hour || list[0].Interval != time.Minute {
		t.Fatalf("session record keeps timeout %v and interval %v, want 1h and 1m", list[0].Timeout, list[0].Interval)
	}

	time.Sleep(50 * time.Millisecond)
	reclaimer.wantReclaimed(ss[3], 10*time.Millisecond, 0,
		"a 10ms client 50ms after the others' heartbeats (theirs: 1h, 1s, none)")
	time.Sleep(1200 * time.Millisecond)
	reclaimer.wantReclaimed(ss[3], time.Hour, 1, "a 1h client 1.25s after a 1s session's heartbeat")
	if err := ss[1].Heartbeat(short.ctx); !errors.Is(err, meta.ErrSessionLost) {
		t.Fatalf("heartbeat of the reclaimed 1s session: %v", err)
	}
	long.check(ss[0].Heartbeat(long.ctx), "heartbeat of the 1h session")
	legacy.check(ss[2].Heartbeat(legacy.ctx), "heartbeat of the session without a timeout")
}

// testEngineClock: heartbeats are stamped, and sessions judged, on the
// engine's clock. A client an hour slow begins a 1s session; clients an
// hour fast and on time do not reclaim it while it is fresh, and do once
// a second has passed (on any clock).
func testEngineClock(t *testing.T, newClients SkewedClientsFactory) {
	cs := formatClients(t, newClients(t, []time.Duration{-time.Hour, time.Hour, 0}))
	ss := sessionsOf(t, cs)
	slow, fast, onTime := cs[0], cs[1], cs[2]
	_, err := ss[0].BeginSession(slow.ctx, meta.SessionInfo{Host: "slow", Timeout: time.Second})
	slow.check(err, "begin session on a slow clock")
	list, err := ss[1].ListSessions(fast.ctx)
	fast.check(err, "list sessions")
	// The hook is live: the client's own Started is an hour behind.
	if lag := time.Since(list[0].Started); lag < 59*time.Minute || lag > 61*time.Minute {
		t.Fatalf("slow client: started %v, %v ago: the skew hook is not in effect", list[0].Started, lag)
	}
	fast.wantReclaimed(ss[1], time.Millisecond, 0, "a client an hour fast, at once")
	onTime.wantReclaimed(ss[2], time.Millisecond, 0, "a client on time, at once")
	slow.check(ss[0].Heartbeat(slow.ctx), "heartbeat on a slow clock")
	fast.wantReclaimed(ss[1], time.Millisecond, 0, "a client an hour fast, after a heartbeat")
	time.Sleep(1200 * time.Millisecond)
	fast.wantReclaimed(ss[1], time.Hour, 1, "a client an hour fast, 1.2s after the heartbeat")
}
