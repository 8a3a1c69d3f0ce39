package metatest

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"shoal/internal/meta"
)

func testLocks(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	l, ok := v.e.(meta.Locker)
	if !ok {
		t.Skip("engine has no Locker")
	}
	f := v.file(meta.RootIno, "f")
	testFlock(v, l, f.Ino)
	testSetlk(v, l, v.file(meta.RootIno, "g").Ino)
}

func testFlock(v *env, l meta.Locker, ino meta.Ino) {
	flock := func(owner uint64, typ uint32, want syscall.Errno, what string) {
		v.t.Helper()
		v.wantErrno(l.Flock(v.ctx, ino, owner, typ), want, what)
	}
	flock(1, meta.LockRead, 0, "shared lock")
	flock(2, meta.LockRead, 0, "second shared lock")
	flock(3, meta.LockWrite, syscall.EAGAIN, "exclusive lock over shared ones")
	flock(1, meta.LockWrite, syscall.EAGAIN, "upgrade while another shares")
	flock(1, meta.LockUnlock, 0, "unlock")
	flock(2, meta.LockUnlock, 0, "unlock")
	flock(2, meta.LockUnlock, 0, "unlock of nothing")
	flock(3, meta.LockWrite, 0, "exclusive lock")
	flock(3, meta.LockWrite, 0, "exclusive lock again")
	flock(1, meta.LockRead, syscall.EAGAIN, "shared lock over an exclusive one")
	flock(3, meta.LockRead, 0, "downgrade")
	flock(1, meta.LockRead, 0, "shared lock after downgrade")
	v.wantErrno(l.Flock(v.ctx, 9999999, 1, meta.LockRead), syscall.ENOENT, "flock of a missing inode")
	flock(1, 7, syscall.EINVAL, "bad lock type")
}

func testSetlk(v *env, l meta.Locker, ino meta.Ino) {
	setlk := func(owner uint64, typ uint32, start, end uint64, want syscall.Errno, what string) {
		v.t.Helper()
		v.wantErrno(l.Setlk(v.ctx, ino, owner, meta.Lock{Type: typ, Start: start, End: end, Pid: uint32(owner)}), want, what)
	}
	getlk := func(owner uint64, typ uint32, start, end uint64) meta.Lock {
		v.t.Helper()
		got, err := l.Getlk(v.ctx, ino, owner, meta.Lock{Type: typ, Start: start, End: end})
		v.check(err, "getlk")
		return got
	}
	setlk(1, meta.LockWrite, 0, 99, 0, "write lock")
	setlk(2, meta.LockRead, 50, 60, syscall.EAGAIN, "read lock inside another's write lock")
	if got := getlk(2, meta.LockRead, 50, 60); got != (meta.Lock{Type: meta.LockWrite, Start: 0, End: 99, Pid: 1}) {
		v.t.Fatalf("getlk found %+v", got)
	}
	if got := getlk(1, meta.LockWrite, 0, 10); got.Type != meta.LockUnlock {
		v.t.Fatalf("getlk reports the owner's own lock: %+v", got)
	}
	setlk(2, meta.LockWrite, 100, meta.LockEnd, 0, "write lock after the other")
	setlk(1, meta.LockUnlock, 0, 49, 0, "unlock the front")
	setlk(2, meta.LockRead, 0, 49, 0, "read lock in the freed front")
	setlk(2, meta.LockRead, 50, 50, syscall.EAGAIN, "read lock on what the other still holds")
	// Splitting: unlocking the middle of one's lock leaves two.
	setlk(1, meta.LockUnlock, 70, 79, 0, "unlock the middle")
	setlk(3, meta.LockWrite, 72, 75, 0, "lock the hole")
	setlk(3, meta.LockWrite, 69, 69, syscall.EAGAIN, "lock just before the hole")
	setlk(3, meta.LockWrite, 80, 80, syscall.EAGAIN, "lock just after the hole")
	// Merging: adjacent locks of one owner and type report as one.
	setlk(4, meta.LockWrite, 60, 60, syscall.EAGAIN, "write lock over owner 1's")
	setlk(2, meta.LockRead, 0, 49, 0, "read lock again, unchanged")
	setlk(1, meta.LockUnlock, 0, meta.LockEnd, 0, "owner 1 unlocks everything")
	setlk(3, meta.LockUnlock, 0, meta.LockEnd, 0, "owner 3 unlocks everything")
	setlk(2, meta.LockRead, 50, 99, 0, "extend the read lock")
	if got := getlk(5, meta.LockWrite, 60, 60); got.Start != 0 || got.End != 99 || got.Type != meta.LockRead {
		v.t.Fatalf("adjacent read locks were not merged: %+v", got)
	}
	// A different type over the range replaces it (fcntl conversion).
	setlk(2, meta.LockWrite, 10, 19, 0, "convert part to a write lock")
	if got := getlk(5, meta.LockRead, 15, 15); got.Type != meta.LockWrite || got.Start != 10 || got.End != 19 {
		v.t.Fatalf("converted range: %+v", got)
	}
	setlk(2, meta.LockRead, 9, 5, syscall.EINVAL, "start after end")
	v.wantErrno(l.Setlk(v.ctx, 9999999, 1, meta.Lock{Type: meta.LockRead, End: 1}), syscall.ENOENT, "setlk of a missing inode")
}

// testSessions checks sessions across clients: listing, lock ownership
// per session, reclaim of a silent client's locks and orphans, and
// EndSession.
func testSessions(t *testing.T, newClients ClientsFactory) {
	cs := clients(t, newClients, 2)
	a, b := cs[0], cs[1]
	sa, ok := a.e.(meta.Sessions)
	if !ok {
		t.Skip("engine has no Sessions")
	}
	sb := b.e.(meta.Sessions)
	la, lb := a.e.(meta.Locker), b.e.(meta.Locker)
	idA, err := sa.BeginSession(a.ctx, meta.SessionInfo{Host: "a", Mountpoint: "/mnt/a", PID: 1, Timeout: 10 * time.Millisecond})
	a.check(err, "begin session")
	idB, err := sb.BeginSession(b.ctx, meta.SessionInfo{Host: "b", Mountpoint: "/mnt/b", PID: 2})
	b.check(err, "begin session")
	list, err := sb.ListSessions(b.ctx)
	b.check(err, "list sessions")
	if len(list) != 2 || list[0].ID != idA || list[1].ID != idB || list[0].Host != "a" || list[0].Heartbeat.IsZero() {
		t.Fatalf("sessions %+v", list)
	}
	f := a.file(meta.RootIno, "f")
	a.check(la.Flock(a.ctx, f.Ino, 1, meta.LockWrite), "flock on a")
	b.wantErrno(lb.Flock(b.ctx, f.Ino, 1, meta.LockWrite), syscall.EAGAIN, "same owner id, other session")
	a.check(la.Setlk(a.ctx, f.Ino, 1, meta.Lock{Type: meta.LockWrite, End: meta.LockEnd}), "setlk on a")
	o := a.file(meta.RootIno, "open-unlinked")
	s := a.write(o.Ino, 0, 10)
	rm, err := a.e.Unlink(a.ctx, meta.RootIno, "open-unlinked")
	a.check(err, "unlink")
	if !rm.Orphan {
		t.Fatal("no orphan")
	}

	time.Sleep(20 * time.Millisecond)
	b.check(sb.Heartbeat(b.ctx), "heartbeat b")
	n, err := sb.ReclaimSessions(b.ctx, 10*time.Millisecond)
	b.check(err, "reclaim")
	if n != 1 {
		t.Fatalf("reclaimed %d sessions, want 1 (a)", n)
	}
	b.check(lb.Flock(b.ctx, f.Ino, 1, meta.LockWrite), "flock after reclaim")
	b.check(lb.Setlk(b.ctx, f.Ino, 1, meta.Lock{Type: meta.LockWrite, End: meta.LockEnd}), "setlk after reclaim")
	if _, err := b.e.Getattr(b.ctx, o.Ino); !isErrno(err, syscall.ENOENT) {
		t.Fatalf("reclaimed session's orphan still exists: %v", err)
	}
	b.wantFreed(s, true)
	if err := sa.Heartbeat(a.ctx); !errors.Is(err, meta.ErrSessionLost) {
		t.Fatalf("heartbeat of a reclaimed session: %v", err)
	}

	o2 := b.file(meta.RootIno, "b-open-unlinked")
	_, err = b.e.Unlink(b.ctx, meta.RootIno, "b-open-unlinked")
	b.check(err, "unlink")
	b.check(sb.EndSession(b.ctx), "end session")
	b.check(sb.EndSession(b.ctx), "end session again")
	if _, err := a.e.Getattr(a.ctx, o2.Ino); !isErrno(err, syscall.ENOENT) {
		t.Fatalf("ended session's orphan still exists: %v", err)
	}
	if list, _ := sa.ListSessions(a.ctx); len(list) != 0 {
		t.Fatalf("sessions after both ended: %+v", list)
	}
	_, err = sa.BeginSession(a.ctx, meta.SessionInfo{Host: "a"})
	a.check(err, "new session")
	a.check(la.Flock(a.ctx, f.Ino, 1, meta.LockWrite), "flock once b's session ended")
}
