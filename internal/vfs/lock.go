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

// Getlk returns the first lock conflicting with lk (F_GETLK).
func (fs *FS) Getlk(ctx context.Context, ino meta.Ino, owner uint64, lk meta.Lock) (meta.Lock, error) {
	l, err := fs.locker()
	if err != nil {
		return meta.Lock{}, err
	}
	return l.Getlk(ctx, ino, owner, lk)
}

// Setlk sets or clears a byte-range lock (F_SETLK; with wait, F_SETLKW).
func (fs *FS) Setlk(ctx context.Context, ino meta.Ino, owner uint64, lk meta.Lock, wait bool) error {
	l, err := fs.locker()
	if err != nil {
		return err
	}
	return retryLock(ctx, wait, func() error { return l.Setlk(ctx, ino, owner, lk) })
}

// Flock takes or drops a whole-file lock (flock(2); wait unless LOCK_NB).
func (fs *FS) Flock(ctx context.Context, ino meta.Ino, owner uint64, typ uint32, wait bool) error {
	l, err := fs.locker()
	if err != nil {
		return err
	}
	return retryLock(ctx, wait, func() error { return l.Flock(ctx, ino, owner, typ) })
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
