package kvmeta

import (
	"context"
	"syscall"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

// Mknod creates an inode with one transaction of two reads (parent attr,
// entry) and three or four writes (entry, child attr, parent attr, and a
// symlink's target), plus the two keys of an open record with
// MknodRequest.Open (open.go). The inode number comes from the client's reserved
// batch before the transaction starts, and goes back if it is not used
// (after a failure, only if MknodRequest.Reserved was not told it).
func (e *Engine) Mknod(ctx context.Context, req meta.MknodRequest) (meta.Entry, error) {
	if err := checkMknod(req); err != nil {
		return meta.Entry{}, err
	}
	ino, err := e.newInode(ctx)
	if err != nil {
		return meta.Entry{}, wrap(err, "mknod %d/%q", req.Parent, req.Name)
	}
	if req.Reserved != nil {
		req.Reserved(ino)
	}
	var ent meta.Entry
	var op opener
	err = e.update(ctx, func(t *txn) error {
		var err error
		if ent, err = t.mknod(ino, req); err == nil && req.Open {
			op.open(t, ent.Ino, ino)
		}
		return err
	})
	op.done(err, ino)
	// A number Reserved was told goes back only when an existing file
	// was returned (the name holds another number, and the kernel holds
	// the directory until the reply): after a failure, an intent naming it
	// could otherwise match the next create's name.
	if (err != nil && req.Reserved == nil) || (err == nil && ent.Ino != ino) {
		e.inodes.giveBack(uint64(ino))
	}
	if err != nil {
		return meta.Entry{}, wrap(err, "mknod %d/%q", req.Parent, req.Name)
	}
	if ent.Ino == ino && req.Type == meta.TypeFile {
		e.noteEmptyFile(ino)
	}
	return ent, nil
}

// noteEmptyFile caches, on a volume with the chunk cache, the first chunk
// of a regular file this client just created as empty at generation 0:
// inode numbers are never reused, so it has no chunk keys, and any write
// of them by anyone raises the generation (chunkcache.go). Its first
// commit (and read) then need not read the chunk: on Redis that read is a
// Scan, which WATCHes and turns the commit into MULTI/EXEC.
func (e *Engine) noteEmptyFile(ino meta.Ino) {
	if f := e.cachedFormat(); f != nil && f.Version >= appendedChunksVersion {
		e.chunks.put(chunkRef{ino, 0}, 0, make([]meta.Slice, 0, appendRoom), nil, nil)
	}
}

// opener counts and records an open made inside a write transaction that
// may run more than once (Mknod with MknodRequest.Open). The count is
// taken inside the transaction, so that a concurrent drop of an older
// record of the same inode either sees it or conflicts with the write.
type opener struct {
	opens *openState
	ino   meta.Ino
	write bool
}

// open counts ino open (once per call, whatever the attempts) and records
// it in t unless a stored record is known. fresh is the inode number
// Mknod allocated: ino is new when it is that one.
func (o *opener) open(t *txn, ino, fresh meta.Ino) {
	if o.ino != ino {
		if o.ino != 0 {
			o.opens.release(o.ino)
		}
		o.opens, o.ino = t.opens, ino
		o.write = o.opens.acquire(ino)
	}
	if o.write {
		if a, err := t.attr(ino); err == nil {
			t.recordOpen(ino, a, ino == fresh)
		}
	}
}

// done settles the count once the transaction is over; a new inode's
// record is one this client knows the fate of (openState.created).
func (o *opener) done(err error, fresh meta.Ino) {
	switch {
	case o.ino == 0:
	case err != nil:
		o.opens.release(o.ino)
	case o.write:
		o.opens.recorded(o.ino)
		if o.ino == fresh {
			o.opens.noteCreated(o.ino)
		}
	}
}

// checkMknod validates a request before any transaction.
func checkMknod(req meta.MknodRequest) error {
	if req.Name == "." || req.Name == ".." {
		return syscall.EEXIST
	}
	if err := meta.CheckName(req.Name); err != nil {
		return err
	}
	if req.Type < meta.TypeFile || req.Type > meta.TypeSocket {
		return syscall.EINVAL
	}
	if req.Type == meta.TypeSymlink {
		if req.Target == "" {
			return syscall.ENOENT
		}
		if len(req.Target) > meta.MaxSymlinkLen {
			return syscall.ENAMETOOLONG
		}
	}
	return nil
}

func (t *txn) mknod(ino meta.Ino, req meta.MknodRequest) (meta.Entry, error) {
	if err := t.prefetch(nil, dirEntry{req.Parent, req.Name}); err != nil {
		return meta.Entry{}, err
	}
	p, err := t.dirFor(req.Parent, meta.MayExec)
	if err != nil {
		return meta.Entry{}, err
	}
	old, oldType, err := t.lookup(req.Parent, req.Name)
	switch {
	case err == syscall.ENOENT:
	case err != nil:
		return meta.Entry{}, err
	case req.Exclusive || req.Type != meta.TypeFile:
		return meta.Entry{}, syscall.EEXIST
	case oldType == meta.TypeDir:
		return meta.Entry{}, syscall.EISDIR
	case oldType != meta.TypeFile:
		return meta.Entry{}, syscall.EEXIST
	default:
		a, err := t.attr(old)
		if err != nil {
			return meta.Entry{}, err
		}
		return meta.Entry{Ino: old, Attr: *a}, nil
	}
	if err := t.refuseTrash(req.Parent); err != nil {
		return meta.Entry{}, err
	}
	if err := t.access(req.Parent, p, meta.MayWrite|meta.MayExec); err != nil {
		return meta.Entry{}, err
	}
	if p.Nlink == 0 {
		return meta.Entry{}, syscall.ENOENT // the directory was removed
	}
	acls, err := t.inherit(req.Parent, &req)
	if err != nil {
		return meta.Entry{}, err
	}
	a := t.newAttr(p, req)
	t.put(ino, a)
	acls.put(t, ino)
	t.tx.Set(dentryKey(req.Parent, req.Name), encodeDentry(ino, req.Type))
	if req.Type == meta.TypeSymlink {
		t.tx.Set(symlinkKey(ino), []byte(req.Target))
	}
	if req.Type == meta.TypeDir {
		p.Nlink++
		t.touch(req.Parent)
		// No entry of a new inode exists yet: a store that is told of
		// every change may know its names absent without reading them.
		kv.FreshPrefix(t.tx, inoKey(kindDentry, ino))
	}
	t.touchDir(req.Parent, p)
	t.files++
	t.charge(req.Parent, 0, 1)
	return meta.Entry{Ino: ino, Attr: *a}, nil
}

// newAttr builds a new inode's attributes.
func (t *txn) newAttr(p *meta.Attr, req meta.MknodRequest) *meta.Attr {
	uid, gid, mode := meta.NewOwner(t.cred, *p, req.Type, req.Mode)
	a := &meta.Attr{
		Type: req.Type, Mode: mode, Uid: uid, Gid: gid,
		Atime: t.now, Mtime: t.now, Ctime: t.now, Nlink: 1,
		Parent: req.Parent, // for every type: directory quotas (dirquota.go)
	}
	switch req.Type {
	case meta.TypeDir:
		a.Nlink, a.Length, a.Parent = 2, dirLength, req.Parent
	case meta.TypeSymlink:
		a.Length = uint64(len(req.Target))
	case meta.TypeBlockDev, meta.TypeCharDev:
		a.Rdev = req.Rdev
	}
	return a
}

// Link adds parent/name for ino: EPERM for a directory, ENOENT for an inode
// whose last link is gone, EEXIST, EMLINK past the link limit.
func (e *Engine) Link(ctx context.Context, ino meta.Ino, parent meta.Ino, name string) (meta.Entry, error) {
	if err := meta.CheckName(name); err != nil {
		if name == "." || name == ".." {
			err = syscall.EEXIST
		}
		return meta.Entry{}, err
	}
	var ent meta.Entry
	err := e.update(ctx, func(t *txn) error {
		a, err := t.attr(ino)
		if err != nil {
			return err
		}
		p, err := t.dirFor(parent, meta.MayExec)
		if err != nil {
			return err
		}
		if _, _, err := t.lookup(parent, name); err != syscall.ENOENT {
			return firstErr(err, syscall.EEXIST)
		}
		if err := t.refuseTrash(parent); err != nil {
			return err
		}
		if err := t.access(parent, p, meta.MayWrite|meta.MayExec); err != nil {
			return err
		}
		switch {
		case a.Type == meta.TypeDir:
			return syscall.EPERM
		case a.Nlink == 0 || p.Nlink == 0:
			return syscall.ENOENT
		case a.Nlink >= maxLinks:
			return syscall.EMLINK
		}
		if err := t.checkQuotaMove(a.Parent, parent); err != nil {
			return err
		}
		a.Nlink++
		a.Ctime = t.now
		t.touch(ino)
		t.touchDir(parent, p)
		t.tx.Set(dentryKey(parent, name), encodeDentry(ino, a.Type))
		ent = meta.Entry{Ino: ino, Attr: *a}
		return nil
	})
	return ent, wrap(err, "link %d to %d/%q", ino, parent, name)
}

// maxLinks bounds a file's hard links, as ext4's 65000.
const maxLinks = 65000
