package kvmeta

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"syscall"

	"shoal/internal/meta"
)

// Locks.
//
// All flock(2) locks of an inode are one key, 'Q' ino → records of
// (session, owner, type); all fcntl(2) locks one key, 'P' ino → records of
// (session, owner, type, pid, start, end). A lock call is one transaction
// that reads the inode's records, decides, and writes them back, so
// conflicting calls on one inode serialize in the backend and never block
// in the engine. Owners are qualified by the session of the engine that
// took the lock ('q' session ino indexes which inodes a session locks), so
// the owners of different machines never meet, and ending a session
// releases exactly its locks.

var _ meta.Locker = (*Engine)(nil)

// owner is a lock owner as stored: the kernel's owner within a session.
type owner struct {
	session meta.SessionID
	id      uint64
}

type flockRecord struct {
	owner
	typ uint32
}

type plockRecord struct {
	owner
	meta.Lock
}

const (
	flockLen = 8 + 8 + 1
	plockLen = 8 + 8 + 1 + 4 + 8 + 8
)

func flockKey(ino meta.Ino) []byte { return inoKey(kindFlock, ino) }
func plockKey(ino meta.Ino) []byte { return inoKey(kindPlock, ino) }

// Flock takes, converts or drops a whole-file lock.
func (e *Engine) Flock(ctx context.Context, ino meta.Ino, ownerID uint64, typ uint32) error {
	if typ > meta.LockUnlock {
		return syscall.EINVAL
	}
	err := e.update(ctx, func(t *txn) error {
		if _, err := t.attr(ino); err != nil {
			return err
		}
		recs, err := t.flocks(ino)
		if err != nil {
			return err
		}
		me := owner{t.session, ownerID}
		recs = slices.DeleteFunc(recs, func(r flockRecord) bool { return r.owner == me })
		if typ != meta.LockUnlock {
			for _, r := range recs {
				if typ == meta.LockWrite || r.typ == meta.LockWrite {
					return syscall.EAGAIN
				}
			}
			recs = append(recs, flockRecord{me, typ})
		}
		t.setFlocks(ino, recs)
		return t.syncLockIndex(ino, recs, nil)
	})
	return wrap(err, "flock %d owner %x type %d", ino, ownerID, typ)
}

// Getlk finds the first conflicting lock of another owner.
func (e *Engine) Getlk(ctx context.Context, ino meta.Ino, ownerID uint64, lk meta.Lock) (meta.Lock, error) {
	if err := checkLock(lk); err != nil {
		return meta.Lock{}, err
	}
	out := lk
	out.Type = meta.LockUnlock
	err := e.view(ctx, func(t *txn) error {
		if _, err := t.attr(ino); err != nil {
			return err
		}
		recs, err := t.plocks(ino)
		if err != nil {
			return err
		}
		me := owner{e.currentSession(), ownerID}
		for _, r := range recs {
			if r.owner != me && conflicts(r.Lock, lk) {
				out = r.Lock
				break
			}
		}
		return nil
	})
	return out, wrap(err, "getlk %d owner %x", ino, ownerID)
}

// Setlk sets or clears a byte-range lock with fcntl semantics.
func (e *Engine) Setlk(ctx context.Context, ino meta.Ino, ownerID uint64, lk meta.Lock) error {
	if err := checkLock(lk); err != nil {
		return err
	}
	err := e.update(ctx, func(t *txn) error {
		if _, err := t.attr(ino); err != nil {
			return err
		}
		recs, err := t.plocks(ino)
		if err != nil {
			return err
		}
		me := owner{t.session, ownerID}
		for _, r := range recs {
			if r.owner != me && lk.Type != meta.LockUnlock && conflicts(r.Lock, lk) {
				return syscall.EAGAIN
			}
		}
		recs = setRange(recs, me, lk)
		t.setPlocks(ino, recs)
		return t.syncLockIndex(ino, nil, recs)
	})
	return wrap(err, "setlk %d owner %x %+v", ino, ownerID, lk)
}

func checkLock(lk meta.Lock) error {
	if lk.Type > meta.LockUnlock || lk.Start > lk.End {
		return syscall.EINVAL
	}
	return nil
}

// conflicts reports whether two locks of different owners exclude each
// other: they overlap and at least one is a write lock.
func conflicts(a, b meta.Lock) bool {
	overlap := a.Start <= b.End && b.Start <= a.End
	return overlap && (a.Type == meta.LockWrite || b.Type == meta.LockWrite)
}

// setRange applies lk to me's records: whatever me held over the range
// goes, lk (unless an unlock) takes its place, and me's adjacent or
// overlapping locks of one type merge.
func setRange(recs []plockRecord, me owner, lk meta.Lock) []plockRecord {
	var out, mine []plockRecord
	for _, r := range recs {
		if r.owner != me {
			out = append(out, r)
			continue
		}
		if r.End < lk.Start || r.Start > lk.End {
			mine = append(mine, r)
			continue
		}
		if r.Start < lk.Start {
			left := r
			left.End = lk.Start - 1
			mine = append(mine, left)
		}
		if r.End > lk.End {
			right := r
			right.Start = lk.End + 1
			mine = append(mine, right)
		}
	}
	if lk.Type != meta.LockUnlock {
		mine = append(mine, plockRecord{me, lk})
	}
	return append(out, mergeLocks(mine)...)
}

// mergeLocks merges one owner's records of one type that touch.
func mergeLocks(mine []plockRecord) []plockRecord {
	slices.SortFunc(mine, func(a, b plockRecord) int { return cmp.Compare(a.Start, b.Start) })
	var out []plockRecord
	for _, r := range mine {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if last.Type == r.Type && last.End != meta.LockEnd && last.End+1 >= r.Start {
				last.End = max(last.End, r.End)
				continue
			}
		}
		out = append(out, r)
	}
	return out
}

// syncLockIndex keeps the session's 'q' entry for ino while it holds any
// lock there. One of flocks and plocks is what the caller just wrote; the
// other is read only when needed.
func (t *txn) syncLockIndex(ino meta.Ino, flocks []flockRecord, plocks []plockRecord) error {
	holds := slices.ContainsFunc(flocks, func(r flockRecord) bool { return r.session == t.session }) ||
		slices.ContainsFunc(plocks, func(r plockRecord) bool { return r.session == t.session })
	if !holds {
		var err error
		if holds, err = t.holdsOther(ino, flocks == nil); err != nil {
			return err
		}
	}
	key := sessionIndexKey(kindSessionLock, t.session, ino)
	if holds {
		t.tx.Set(key, nil)
	} else {
		t.tx.Delete(key)
	}
	return nil
}

// holdsOther reports whether the session holds a lock of the other kind.
func (t *txn) holdsOther(ino meta.Ino, flock bool) (bool, error) {
	if flock {
		recs, err := t.flocks(ino)
		return slices.ContainsFunc(recs, func(r flockRecord) bool { return r.session == t.session }), err
	}
	recs, err := t.plocks(ino)
	return slices.ContainsFunc(recs, func(r plockRecord) bool { return r.session == t.session }), err
}

// dropSessionLocks releases every lock session id holds on ino.
func (t *txn) dropSessionLocks(id meta.SessionID, ino meta.Ino) error {
	flocks, err := t.flocks(ino)
	if err != nil {
		return err
	}
	plocks, err := t.plocks(ino)
	if err != nil {
		return err
	}
	t.setFlocks(ino, slices.DeleteFunc(flocks, func(r flockRecord) bool { return r.session == id }))
	t.setPlocks(ino, slices.DeleteFunc(plocks, func(r plockRecord) bool { return r.session == id }))
	t.tx.Delete(sessionIndexKey(kindSessionLock, id, ino))
	return nil
}

// dropAllLocks deletes every lock on ino, whoever holds it.
func (t *txn) dropAllLocks(ino meta.Ino) error {
	flocks, err := t.flocks(ino)
	if err != nil {
		return err
	}
	plocks, err := t.plocks(ino)
	for _, r := range flocks {
		t.tx.Delete(sessionIndexKey(kindSessionLock, r.session, ino))
	}
	for _, r := range plocks {
		t.tx.Delete(sessionIndexKey(kindSessionLock, r.session, ino))
	}
	t.tx.Delete(flockKey(ino))
	t.tx.Delete(plockKey(ino))
	return err
}

func (t *txn) flocks(ino meta.Ino) ([]flockRecord, error) {
	raw, err := t.tx.Get(flockKey(ino))
	if err != nil {
		return nil, err
	}
	if len(raw)%flockLen != 0 {
		return nil, fmt.Errorf("bad flock record of %d (%d bytes)", ino, len(raw))
	}
	var out []flockRecord
	for ; len(raw) > 0; raw = raw[flockLen:] {
		out = append(out, flockRecord{owner{meta.SessionID(be.Uint64(raw)), be.Uint64(raw[8:])}, uint32(raw[16])})
	}
	return out, nil
}

func (t *txn) setFlocks(ino meta.Ino, recs []flockRecord) {
	if len(recs) == 0 {
		t.tx.Delete(flockKey(ino))
		return
	}
	b := make([]byte, 0, len(recs)*flockLen)
	for _, r := range recs {
		b = be.AppendUint64(b, uint64(r.session))
		b = be.AppendUint64(b, r.id)
		b = append(b, byte(r.typ))
	}
	t.tx.Set(flockKey(ino), b)
}

func (t *txn) plocks(ino meta.Ino) ([]plockRecord, error) {
	raw, err := t.tx.Get(plockKey(ino))
	if err != nil {
		return nil, err
	}
	if len(raw)%plockLen != 0 {
		return nil, fmt.Errorf("bad fcntl lock record of %d (%d bytes)", ino, len(raw))
	}
	var out []plockRecord
	for ; len(raw) > 0; raw = raw[plockLen:] {
		out = append(out, plockRecord{
			owner: owner{meta.SessionID(be.Uint64(raw)), be.Uint64(raw[8:])},
			Lock: meta.Lock{Type: uint32(raw[16]), Pid: be.Uint32(raw[17:]),
				Start: be.Uint64(raw[21:]), End: be.Uint64(raw[29:])},
		})
	}
	return out, nil
}

func (t *txn) setPlocks(ino meta.Ino, recs []plockRecord) {
	if len(recs) == 0 {
		t.tx.Delete(plockKey(ino))
		return
	}
	b := make([]byte, 0, len(recs)*plockLen)
	for _, r := range recs {
		b = be.AppendUint64(b, uint64(r.session))
		b = be.AppendUint64(b, r.id)
		b = append(b, byte(r.Type))
		b = be.AppendUint32(b, r.Pid)
		b = be.AppendUint64(b, r.Start)
		b = be.AppendUint64(b, r.End)
	}
	t.tx.Set(plockKey(ino), b)
}
