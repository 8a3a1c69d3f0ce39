package vfs

import (
	"context"
	"errors"
	"syscall"
	"time"

	"shoal/internal/meta"
)

// Locks are held in the engine (meta.Locker) so they bind every machine
// that mounts the volume. The engine never blocks; the blocking variants
// poll with backoff here, until they win or the caller is interrupted.
// An engine without Locker makes these calls ENOSYS, which tells the
// kernel to keep locks local to this machine.

// Locking reports whether locks are shared through the engine.
func (fs *FS) Locking() bool {
	_, ok := fs.engine.(meta.Locker)
	return ok
}

func (fs *FS) locker() (meta.Locker, error) {
	l, ok := fs.engine.(meta.Locker)
	if !ok {
		return nil, syscall.ENOSYS
	}
	return l, nil
}

// Getlk returns the first lock conflicting with lk (F_GETLK) for a lock
// call through fh.
func (fs *FS) Getlk(ctx context.Context, fh Fh, ino meta.Ino, owner uint64, lk meta.Lock) (meta.Lock, error) {
	l, err := fs.locker()
	if err != nil {
		return meta.Lock{}, err
	}
	h, err := fs.handle(fh)
	if err != nil {
		return meta.Lock{}, err
	}
	if fs.fence.lost(h.lockEpoch.Load()) {
		return meta.Lock{}, syscall.EIO
	}
	return l.Getlk(ctx, ino, owner, lk)
}

// Setlk sets or clears a byte-range lock (F_SETLK; with wait, F_SETLKW)
// through fh.
func (fs *FS) Setlk(ctx context.Context, fh Fh, ino meta.Ino, owner uint64, lk meta.Lock, wait bool) error {
	l, err := fs.locker()
	if err != nil {
		return err
	}
	return fs.lockCall(ctx, fh, lk.Type == meta.LockUnlock, wait, func(ctx context.Context) error {
		return l.Setlk(ctx, ino, owner, lk)
	})
}

// Flock takes or drops a whole-file lock (flock(2); wait unless LOCK_NB)
// through fh.
func (fs *FS) Flock(ctx context.Context, fh Fh, ino meta.Ino, owner uint64, typ uint32, wait bool) error {
	l, err := fs.locker()
	if err != nil {
		return err
	}
	return fs.lockCall(ctx, fh, typ == meta.LockUnlock, wait, func(ctx context.Context) error {
		return l.Flock(ctx, ino, owner, typ)
	})
}

// lockCall runs a lock request through handle fh under the fence
// (fence.go). A handle whose locks were lost fails every lock call with
// EIO until it is closed. An unlock otherwise always goes through (it
// cannot give anyone a second lock). A lock is refused with EAGAIN while
// the lease has run out (a blocking request waits for the renewal), and
// each attempt is bounded by the lease's end (EIO if it ends first: the
// outcome is unknown); once granted, the handle and its file are marked
// as holding locks.
func (fs *FS) lockCall(ctx context.Context, fh Fh, unlock, wait bool, try func(context.Context) error) error {
	h, err := fs.handle(fh)
	if err != nil {
		return err
	}
	held := h.lockEpoch.Load()
	if fs.fence.lost(held) {
		return syscall.EIO
	}
	if unlock {
		return try(ctx)
	}
	var epoch uint64
	err = retryLock(ctx, wait, func() error {
		epoch = fs.fence.current()
		c, cancel, err := fs.fence.guard(ctx, epoch)
		if err != nil {
			// Not renewed in time: no new lock until the session is
			// proven alive. A blocking request waits for that as for
			// a conflict.
			return syscall.EAGAIN
		}
		defer cancel()
		if err := try(c); err != nil {
			if c.Err() != nil && ctx.Err() == nil {
				return syscall.EIO // the lease ran out during the call
			}
			return err
		}
		return nil
	})
	if err == nil && epoch != 0 {
		fs.markLocked(h, epoch)
	}
	return err
}

// markLocked records that a lock was taken through h in epoch.
func (fs *FS) markLocked(h *handle, epoch uint64) {
	if h.lockEpoch.CompareAndSwap(0, epoch) && fs.journal != nil {
		fs.noteJournal(fs.journal.Locked(uint64(h.fh)))
	}
	f := h.file
	f.mu.Lock()
	if f.lockEpoch == 0 || epoch < f.lockEpoch {
		f.lockEpoch = epoch
	}
	f.mu.Unlock()
}

// retryLock runs try until it stops returning EAGAIN (when wait) or once.
// The wait backs off from 1 ms to 100 ms; a canceled ctx ends it with
// EINTR, as a signal interrupts fcntl(F_SETLKW).
func retryLock(ctx context.Context, wait bool, try func() error) error {
	delay := time.Millisecond
	for {
		err := try()
		if !wait || !errors.Is(err, syscall.EAGAIN) {
			return err
		}
		select {
		case <-ctx.Done():
			return syscall.EINTR
		case <-time.After(delay):
		}
		delay = min(delay*2, 100*time.Millisecond)
	}
}
