package fusefs

import (
	"context"
	"sync"

	"github.com/hanwen/go-fuse/v2/fuse"

	"shoal/internal/journal"
	"shoal/internal/meta"
	"shoal/internal/vfs"
)

// GetLk implements fuse.RawFileSystem (F_GETLK, F_OFD_GETLK).
func (fs *FS) GetLk(cancel <-chan struct{}, in *fuse.LkIn, out *fuse.LkOut) fuse.Status {
	defer fs.enter()()
	lk, err := fs.vfs.Getlk(ctx(&in.InHeader), vfs.Fh(in.Fh), meta.Ino(in.NodeId), in.Owner, fromFileLock(in.Lk))
	if err != nil {
		return fs.status("getlk", err)
	}
	out.Lk = fuse.FileLock{Start: lk.Start, End: lk.End, Typ: lk.Type, Pid: lk.Pid}
	return fuse.OK
}

// SetLk implements fuse.RawFileSystem (F_SETLK, flock with LOCK_NB).
func (fs *FS) SetLk(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	defer fs.enter()()
	return fs.setLock(ctx(&in.InHeader), in, false)
}

// SetLkw implements fuse.RawFileSystem (F_SETLKW, blocking flock). A
// signal to the waiting process interrupts it (EINTR).
//
// The wait is not gated (it would hold a handover up for as long as the
// lock is contended), but its outcome is: a lock granted once the process
// quiesces is neither recorded nor answered here — the journal is closed —
// and the kernel resends the request to the successor, where the same
// owner in the same session is granted it again and recorded.
func (fs *FS) SetLkw(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	fs.gate.lockWaits.Add(1) // until it passes the gate (setLock)
	c, stop := cancelable(ctx(&in.InHeader), cancel)
	defer stop()
	return fs.setLock(c, in, true)
}

func (fs *FS) setLock(c context.Context, in *fuse.LkIn, wait bool) fuse.Status {
	ino := meta.Ino(in.NodeId)
	if in.LkFlags&fuse.FUSE_LK_FLOCK != 0 {
		err := fs.vfs.Flock(c, vfs.Fh(in.Fh), ino, in.Owner, in.Lk.Typ, wait)
		if wait {
			defer fs.passLockGate()()
		}
		return fs.status("flock", err)
	}
	lk := fromFileLock(in.Lk)
	err := fs.vfs.Setlk(c, vfs.Fh(in.Fh), ino, in.Owner, lk, wait)
	if wait {
		defer fs.passLockGate()()
	}
	if err == nil && lk.Type != meta.LockUnlock {
		fs.posix.add(ino, in.Owner, in.Fh)
	}
	return fs.status("setlk", err)
}

// POSIX locks die with every close(2) of the file by their owner (the
// process's file table), and the kernel keeps no record of FUSE locks, so
// it only says so through the lock owner of FLUSH. OFD locks are owned by
// the open file description and die with its last close, which the kernel
// reports only as RELEASE of the handle, without an owner: so each owner is
// also remembered with the handle it locked through, and what is still held
// at RELEASE (only OFD locks: FLUSH took the POSIX ones) is dropped then.
// posixOwners remembers which (inode, owner) pairs took a lock through this
// mount, so that a close costs an engine call only when there is a lock to
// drop.
type posixOwners struct {
	journal *journal.Journal // records the pairs for a successor, if set
	mu      sync.Mutex
	held    map[posixOwner]bool
	byFh    map[uint64][]posixOwner // owners that locked through each handle
}

type posixOwner struct {
	ino   meta.Ino
	owner uint64
}

func (p *posixOwners) add(ino meta.Ino, owner, fh uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held, p.byFh = map[posixOwner]bool{}, map[uint64][]posixOwner{}
	}
	k := posixOwner{ino, owner}
	if !p.held[k] {
		p.held[k] = true
		p.byFh[fh] = append(p.byFh[fh], k)
		if p.journal != nil {
			_ = p.journal.Owner(fh, uint64(ino), owner)
		}
	}
}

// takeHandle forgets the handle and returns the owners that locked through
// it and still hold locks.
func (p *posixOwners) takeHandle(fh uint64) []posixOwner {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []posixOwner
	for _, k := range p.byFh[fh] {
		if p.held[k] {
			delete(p.held, k)
			out = append(out, k)
		}
	}
	delete(p.byFh, fh)
	return out
}

// take forgets the pair and reports whether it was there. The caller
// journals the pair gone (gone) once its locks are dropped: recorded
// before, a process killed in between would leave a successor unaware of
// locks still held.
func (p *posixOwners) take(ino meta.Ino, owner uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := posixOwner{ino, owner}
	ok := p.held[k]
	delete(p.held, k)
	return ok
}

// gone records for a successor that owner's locks on ino were dropped.
func (p *posixOwners) gone(ino meta.Ino, owner uint64) {
	if p.journal != nil {
		_ = p.journal.OwnerGone(uint64(ino), owner)
	}
}

// releasePosix drops every POSIX lock owner holds on the flushed file.
func (fs *FS) releasePosix(in *fuse.FlushIn) {
	ino := meta.Ino(in.NodeId)
	if !fs.posix.take(ino, in.LockOwner) {
		return
	}
	all := meta.Lock{Type: meta.LockUnlock, Start: 0, End: meta.LockEnd}
	if err := fs.vfs.Setlk(ctx(&in.InHeader), vfs.Fh(in.Fh), ino, in.LockOwner, all, false); err != nil {
		fs.status("release posix locks", err)
		return
	}
	fs.posix.gone(ino, in.LockOwner)
}

// passLockGate is enter for a blocking lock request, counted in lockWaits
// from SetLkw until it is past the gate: once the process quiesces, every
// request lockWaits counts is one it will never answer (AwaitReplies).
func (fs *FS) passLockGate() func() {
	fs.gate.mu.RLock()
	return func() {
		fs.gate.lockWaits.Add(-1)
		fs.gate.mu.RUnlock()
	}
}

func fromFileLock(l fuse.FileLock) meta.Lock {
	return meta.Lock{Type: l.Typ, Start: l.Start, End: l.End, Pid: l.Pid}
}

// releaseOFD drops the byte-range locks still held through a handle at its
// last close: those of open-file-description (OFD) owners.
func (fs *FS) releaseOFD(in *fuse.ReleaseIn) {
	all := meta.Lock{Type: meta.LockUnlock, Start: 0, End: meta.LockEnd}
	for _, k := range fs.posix.takeHandle(in.Fh) {
		if err := fs.vfs.Setlk(ctx(&in.InHeader), vfs.Fh(in.Fh), k.ino, k.owner, all, false); err != nil {
			fs.status("release OFD locks", err)
		}
	}
}

// releaseFlock drops a flock held through a closing file.
func (fs *FS) releaseFlock(in *fuse.ReleaseIn) {
	if in.ReleaseFlags&fuse.FUSE_RELEASE_FLOCK_UNLOCK == 0 || !fs.vfs.Locking() {
		return
	}
	err := fs.vfs.Flock(ctx(&in.InHeader), vfs.Fh(in.Fh), meta.Ino(in.NodeId), in.LockOwner, meta.LockUnlock, false)
	if err != nil {
		fs.status("release flock", err)
	}
}

// cancelable returns a context canceled when the kernel interrupts the
// request (the caller got a signal).
func cancelable(parent context.Context, cancel <-chan struct{}) (context.Context, func()) {
	c, stop := context.WithCancel(parent)
	go func() {
		select {
		case <-cancel:
			stop()
		case <-c.Done():
		}
	}()
	return c, stop
}
