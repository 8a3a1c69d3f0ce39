package vfs

import (
	"context"
	"log/slog"
	"sync"
	"syscall"
	"time"
)

// Fencing: this mount's half of "a lock never has two holders".
//
// The engine reclaims a session once its clock is past the session's last
// heartbeat by more than the session's own timeout T (kvmeta,
// session.go). The heartbeat is stamped after the mount started sending
// it, at local time S. So no one can reclaim the session, and take its
// locks, before S + T as the engine counts it. The mount counts on its own
// monotonic clock from S and holds a lease of
//
//	lease = T − max(heartbeat interval, T/4)
//
// past which it acts as if its locks were gone: writes, fsyncs and lock
// calls through the descriptors that took locks fail with EIO, new lock
// requests get EAGAIN (blocking ones wait for a renewal), and the slices of the files those descriptors hold are not
// committed. Every engine call made on behalf of a lock (a lock request, a
// commit of a locked file's data) carries the lease's end as its deadline,
// so a call retried across an outage cannot land after it. The margin,
// max(heartbeat, T/4), covers the time such a call spends in flight and
// the drift between the two clocks' rates; it is at least a quarter of T,
// and the lease is at least two heartbeats when T is at least three (which
// BeginSession requires).
//
// What happens next depends on the engine. A heartbeat that succeeds
// proves nobody began reclaiming the session (reclaim marks the session
// before it releases anything, and a marked session's heartbeats fail), so
// the lease starts again and the descriptors work again: nothing was lost.
// A heartbeat that answers meta.ErrSessionLost means the locks are gone:
// the session's epoch moves on, and descriptors that took locks in an
// older epoch fail for good, until they are closed; the files' buffered
// writes on this mount are dropped at their last close. New opens and
// locks work normally in the new session.
//
// The lease is counted on Go's monotonic clock, which does not advance
// while the machine is suspended; a mount must not run on a host that is
// suspended (or a VM that is paused) for longer than the margin.
// Rejected: judging by the reply time of a heartbeat (the stamp may be
// older than the reply by the whole round trip) and fencing only once the
// engine says ErrSessionLost (another mount may hold the lock by then).

// fence tracks the lease of this mount's session. The zero fence (no
// sessions) never fails anything.
type fence struct {
	log   *slog.Logger
	lease time.Duration // 0: no session, no fencing
	// locked lists the open files holding locks, for the log lines.
	locked func() []uint64

	mu      sync.Mutex
	renewed time.Time // local start of the last successful renewal (monotonic)
	epoch   uint64    // session generation; moves on when the session is lost
	timer   *time.Timer
	expired bool // the lease ran out and that was logged
}

// leaseFor is how long a renewal that started at S keeps this mount's
// locks valid: see the rule above.
func leaseFor(timeout, heartbeat time.Duration) time.Duration {
	return timeout - max(heartbeat, timeout/4)
}

// start arms the fence for a session begun at started (local time).
func (f *fence) start(lease time.Duration, started time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lease, f.renewed, f.epoch = lease, started, 1
	f.timer = time.AfterFunc(lease, f.onExpiry)
}

// stop disarms the timer (the session ends).
func (f *fence) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.timer != nil {
		f.timer.Stop()
	}
}

// renew records a renewal (heartbeat or new session) that started at
// started and succeeded.
func (f *fence) renew(started time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !started.After(f.renewed) {
		return
	}
	f.renewed = started
	if f.expired && time.Since(started) < f.lease {
		f.expired = false
		f.log.Warn("session renewed: nobody reclaimed it, so this mount still holds its locks; the descriptors that hold them work again")
	}
	f.timer.Reset(time.Until(started.Add(f.lease)))
}

// lose moves to a new epoch: the session was reclaimed, every lock taken
// so far is gone (the caller says so). The lease stays expired until the
// next renew, which starts the new session's.
func (f *fence) lose() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.epoch++
	f.renewed = time.Time{}
	f.expired = false
	f.timer.Stop()
}

// current returns the epoch a lock taken now belongs to (0: no fencing).
func (f *fence) current() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.epoch
}

// lost reports whether a lock taken in epoch is gone for good.
func (f *fence) lost(epoch uint64) bool {
	if epoch == 0 {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return epoch != f.epoch
}

// check returns EIO if what was locked in epoch may no longer be held:
// the lock is gone, or the lease ran out. Epoch 0 (nothing locked) always
// passes.
func (f *fence) check(epoch uint64) error {
	_, err := f.deadline(epoch)
	return err
}

// deadline returns the end of the lease for a lock of epoch, or EIO as
// check.
func (f *fence) deadline(epoch uint64) (time.Time, error) {
	if epoch == 0 {
		return time.Time{}, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	end := f.renewed.Add(f.lease)
	if epoch != f.epoch || !time.Now().Before(end) {
		return time.Time{}, syscall.EIO
	}
	return end, nil
}

// guard returns ctx bounded by the end of the lease of epoch, or EIO as
// check. Epoch 0 returns ctx itself.
func (f *fence) guard(ctx context.Context, epoch uint64) (context.Context, context.CancelFunc, error) {
	end, err := f.deadline(epoch)
	if err != nil || end.IsZero() {
		return ctx, func() {}, err
	}
	c, cancel := context.WithDeadline(ctx, end)
	return c, cancel, nil
}

// onExpiry runs when the lease may have run out: it says so, once, loudly.
func (f *fence) onExpiry() {
	f.mu.Lock()
	left := time.Until(f.renewed.Add(f.lease))
	if left > 0 || f.expired {
		if left > 0 {
			f.timer.Reset(left)
		}
		f.mu.Unlock()
		return
	}
	f.expired = true
	since := time.Since(f.renewed).Round(time.Millisecond)
	f.mu.Unlock()
	files := f.locked()
	if len(files) == 0 {
		f.log.Warn("session not renewed in time: this mount grants no new locks until it is", "since", since)
		return
	}
	f.log.Error("LOCKS SUSPENDED: this mount could not renew its session in time, so another mount may soon take its locks; "+
		"writes, fsyncs and lock calls through the descriptors that hold locks on these inodes now fail with EIO. "+
		"If the session is renewed they work again; if it was reclaimed, close the files and open and lock them again",
		"inodes", files, "since", since)
}
