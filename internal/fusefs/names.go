package fusefs

import (
	"context"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"shoal/internal/meta"
	"shoal/internal/vfs"
)

// Lookup implements fuse.RawFileSystem; a missing name is cached by the
// kernel for NegativeTimeout. A name this mount has just listed is
// answered from the listing (vfs.FS.LookupListed), with the timeouts
// shortened by the listing's age; any other answer comes from the engine
// (or its invalidated cache, with the timeouts shortened by the answer's
// age: cachedCtx) and is newer than what a listing read before it
// (vfs.FS.Refreshed).
func (fs *FS) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	defer fs.enter()()
	if e, read, ok := fs.vfs.LookupListed(ctx(h), meta.Ino(h.NodeId), name, fs.listingTTL()); ok {
		fs.fillEntryRead(e, read, out)
		return fuse.OK
	}
	c, cached := fs.cachedCtx(ctx(h))
	e, err := fs.vfs.Lookup(c, meta.Ino(h.NodeId), name)
	if err == syscall.ENOENT && fs.opts.NegativeTimeout > 0 {
		*out = fuse.EntryOut{}
		out.SetEntryTimeout(max(fs.opts.NegativeTimeout-cachedAge(cached), 0))
		return fuse.OK
	}
	if err != nil {
		return fs.status("lookup", err)
	}
	fs.vfs.Refreshed(e.Ino)
	fs.dirs.forget(e.Ino) // older than what the kernel is now told
	fs.fillEntryRead(e, time.Now().Add(-cachedAge(cached)), out)
	return fuse.OK
}

// Forget implements fuse.RawFileSystem: node ids are inode numbers, so
// there is nothing to forget but the kernel's lookup count (kattrs.go).
func (fs *FS) Forget(nodeid, nlookup uint64) { fs.kattrs.forget(nodeid, nlookup) }

// GetAttr implements fuse.RawFileSystem. A directory this mount just
// changed is answered from the attributes the change wrote (dirattrs.go).
func (fs *FS) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	defer fs.enter()()
	if a, left, ok := fs.dirs.get(meta.Ino(in.NodeId)); ok {
		fs.vfs.Refreshed(meta.Ino(in.NodeId))
		fillAttr(meta.Ino(in.NodeId), a, &out.Attr)
		fs.kattrs.told(in.NodeId, &out.Attr)
		out.SetTimeout(left)
		return fuse.OK
	}
	c, cached := fs.cachedCtx(ctx(&in.InHeader))
	a, err := fs.vfs.Getattr(c, meta.Ino(in.NodeId))
	if err != nil {
		return fs.status("getattr", err)
	}
	fs.vfs.Refreshed(meta.Ino(in.NodeId))
	fillAttr(meta.Ino(in.NodeId), a, &out.Attr)
	fs.kattrs.told(in.NodeId, &out.Attr)
	out.SetTimeout(max(fs.opts.AttrTimeout-cachedAge(cached), 0))
	return fuse.OK
}

// cachedCtx lets the engine answer a lookup or getattr, whose answer
// only feeds the kernel's timed caches, from a cache its server
// invalidates (meta.Cached: a Redis mount's), unless the mount is strict.
// The caller shortens the kernel's timeouts by the answer's age.
func (fs *FS) cachedCtx(c context.Context) (context.Context, *meta.Cached) {
	if fs.listingTTL() <= 0 {
		return c, nil
	}
	r := &meta.Cached{}
	return meta.WithCached(c, r), r
}

// cachedAge is how long ago the answer c reports was current: 0 for one
// read afresh (or no c).
func cachedAge(c *meta.Cached) time.Duration {
	if c == nil {
		return 0
	}
	if at := c.At(); !at.IsZero() {
		return time.Since(at)
	}
	return 0
}

// SetAttr implements fuse.RawFileSystem.
func (fs *FS) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	defer fs.enterChange()()
	defer fs.dirs.changed()
	a, err := fs.vfs.Setattr(ctx(&in.InHeader), meta.Ino(in.NodeId), setattrRequest(in))
	if err != nil {
		return fs.status("setattr", err)
	}
	fillAttr(meta.Ino(in.NodeId), a, &out.Attr)
	fs.kattrs.told(in.NodeId, &out.Attr)
	out.SetTimeout(fs.opts.AttrTimeout)
	return fuse.OK
}

func setattrRequest(in *fuse.SetAttrIn) vfs.SetattrRequest {
	var r vfs.SetattrRequest
	v := in.Valid
	flag := func(bit uint32, m meta.SetattrMask) {
		if v&bit != 0 {
			r.Valid |= m
		}
	}
	flag(fuse.FATTR_MODE, meta.SetMode)
	flag(fuse.FATTR_UID, meta.SetUid)
	flag(fuse.FATTR_GID, meta.SetGid)
	flag(fuse.FATTR_ATIME, meta.SetAtime)
	flag(fuse.FATTR_MTIME, meta.SetMtime)
	flag(fuse.FATTR_ATIME_NOW, meta.SetAtimeNow)
	flag(fuse.FATTR_MTIME_NOW, meta.SetMtimeNow)
	flag(fuse.FATTR_KILL_SUIDGID, meta.SetKillSuidgid)
	r.Mode = uint16(in.Mode & 07777)
	r.Uid, r.Gid = in.Uid, in.Gid
	r.Atime = int64(in.Atime)*1e9 + int64(in.Atimensec) // seconds are signed
	r.Mtime = int64(in.Mtime)*1e9 + int64(in.Mtimensec)
	r.SetSize, r.Size = v&fuse.FATTR_SIZE != 0, in.Size
	return r
}

// Mknod implements fuse.RawFileSystem.
func (fs *FS) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	defer fs.enterChange()()
	return fs.makeEntry(createCtx(&in.InHeader, in.Umask), opMknod, &in.InHeader, name, 0, out, func(c context.Context) (meta.Entry, error) {
		return fs.vfs.Mknod(c, meta.Ino(in.NodeId), name, in.Mode, in.Rdev)
	})
}

// Mkdir implements fuse.RawFileSystem.
func (fs *FS) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	defer fs.enterChange()()
	return fs.makeEntry(createCtx(&in.InHeader, in.Umask), opMkdir, &in.InHeader, name, 0, out, func(c context.Context) (meta.Entry, error) {
		return fs.vfs.Mkdir(c, meta.Ino(in.NodeId), name, in.Mode)
	})
}

// Symlink implements fuse.RawFileSystem.
func (fs *FS) Symlink(cancel <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	defer fs.enterChange()()
	return fs.makeEntry(ctx(h), opSymlink, h, name, 0, out, func(c context.Context) (meta.Entry, error) {
		return fs.vfs.Symlink(c, meta.Ino(h.NodeId), name, target)
	})
}

// Link implements fuse.RawFileSystem.
func (fs *FS) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	defer fs.enterChange()()
	return fs.makeEntry(ctx(&in.InHeader), opLink, &in.InHeader, name, meta.Ino(in.Oldnodeid), out, func(c context.Context) (meta.Entry, error) {
		return fs.vfs.Link(c, meta.Ino(in.Oldnodeid), meta.Ino(in.NodeId), name)
	})
}

// makeEntry runs op, which makes name in h's node (for a link, to the
// inode linked), and answers with the entry: a resend with the recorded
// outcome, or with the entry a first run made before the crash.
func (fs *FS) makeEntry(c context.Context, op int, h *fuse.InHeader, name string, linked meta.Ino, out *fuse.EntryOut, run func(context.Context) (meta.Entry, error)) fuse.Status {
	if st, ok := fs.replayedEntry(h, out); ok {
		return st
	}
	c, ch := fs.dirs.begin(fs.requestCtx(c, h, op), meta.Ino(h.NodeId))
	e, ok, err := fs.committedEntry(c, h, meta.Ino(h.NodeId), name, linked)
	if !ok && err == nil {
		e, err = run(c)
	}
	ch.end(err == nil)
	return fs.entry(op, h, e, err, out)
}

// Readlink implements fuse.RawFileSystem.
func (fs *FS) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	defer fs.enter()()
	target, err := fs.vfs.Readlink(ctx(h), meta.Ino(h.NodeId))
	if err != nil {
		return nil, fs.status("readlink", err)
	}
	return []byte(target), fuse.OK
}

// Unlink implements fuse.RawFileSystem.
func (fs *FS) Unlink(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	defer fs.enterChange()()
	if st, ok := fs.replayedStatus(h); ok {
		return st
	}
	c, ch := fs.dirs.begin(fs.requestCtx(ctx(h), h, opUnlink), meta.Ino(h.NodeId))
	err := fs.committedGone(h, fs.vfs.Unlink(c, meta.Ino(h.NodeId), name), syscall.ENOENT)
	ch.end(err == nil)
	return fs.done(opUnlink, h, err)
}

// Rmdir implements fuse.RawFileSystem.
func (fs *FS) Rmdir(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	defer fs.enterChange()()
	if st, ok := fs.replayedStatus(h); ok {
		return st
	}
	c, ch := fs.dirs.begin(fs.requestCtx(ctx(h), h, opRmdir), meta.Ino(h.NodeId))
	err := fs.committedGone(h, fs.vfs.Rmdir(c, meta.Ino(h.NodeId), name), syscall.ENOENT)
	ch.end(err == nil)
	return fs.done(opRmdir, h, err)
}

// Rename implements fuse.RawFileSystem (rename(2) and renameat2(2)).
func (fs *FS) Rename(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	defer fs.enterChange()()
	h := &in.InHeader
	if st, ok := fs.replayedStatus(h); ok {
		return st
	}
	c, ch := fs.dirs.begin(fs.requestCtx(ctx(h), h, opRename), meta.Ino(in.NodeId), meta.Ino(in.Newdir))
	_, ok, err := fs.committedEntry(c, h, meta.Ino(in.Newdir), newName, 0)
	if !ok && err == nil {
		err = fs.vfs.Rename(c, meta.RenameRequest{
			OldParent: meta.Ino(in.NodeId), OldName: oldName,
			NewParent: meta.Ino(in.Newdir), NewName: newName, Flags: in.Flags,
		})
	}
	ch.end(err == nil)
	return fs.done(opRename, h, err)
}

// Access implements fuse.RawFileSystem (used only without default_permissions).
func (fs *FS) Access(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	defer fs.enter()()
	return fs.status("access", fs.vfs.Access(ctx(&in.InHeader), meta.Ino(in.NodeId), in.Mask))
}

// StatFs implements fuse.RawFileSystem.
func (fs *FS) StatFs(cancel <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	defer fs.enter()()
	st, err := fs.vfs.Statfs(ctx(h), meta.Ino(h.NodeId))
	if err != nil {
		return fs.status("statfs", err)
	}
	const bsize = 4096
	out.Bsize, out.Frsize, out.NameLen = bsize, bsize, meta.MaxNameLen
	out.Blocks = st.TotalSpace / bsize
	out.Bfree = (st.TotalSpace - min(st.UsedSpace, st.TotalSpace)) / bsize
	out.Bavail = out.Bfree
	out.Files = st.TotalInodes
	out.Ffree = st.TotalInodes - min(st.UsedInodes, st.TotalInodes)
	return fuse.OK
}
