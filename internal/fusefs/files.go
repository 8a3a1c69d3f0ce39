package fusefs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"shoal/internal/meta"
	"shoal/internal/vfs"
)

// Create implements fuse.RawFileSystem.
func (fs *FS) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	defer fs.enterChange()()
	h := &in.InHeader
	if o, ok := fs.replies.reopened(h); ok {
		return fs.recreated(h, o, out)
	}
	if st, ok := fs.replayedStatus(h); ok && st != fuse.OK { // a failure; a success is the handle
		return st
	}
	c, ch := fs.dirs.begin(fs.requestCtx(createCtx(h, in.Umask), h, opCreate), meta.Ino(in.NodeId))
	e, res, err := fs.create(c, in, name)
	ch.end(err == nil)
	if err != nil {
		return fs.failed(h, fs.status("create", err))
	}
	fs.fillEntry(e, &out.EntryOut)
	fillOpen(res, &out.OpenOut)
	fs.replies.kill.fire(opCreate)
	return fuse.OK
}

// create creates and opens name in in's node, or, for a resend whose
// first run made the file before the crash and left no handle recorded,
// opens that file as the create would have (it is empty: no truncate).
func (fs *FS) create(c context.Context, in *fuse.CreateIn, name string) (meta.Entry, vfs.OpenResult, error) {
	e, ok, err := fs.committedEntry(c, &in.InHeader, meta.Ino(in.NodeId), name, 0)
	if err != nil {
		return meta.Entry{}, vfs.OpenResult{}, err
	}
	if !ok {
		return fs.vfs.Create(c, meta.Ino(in.NodeId), name, in.Mode, in.Flags)
	}
	res, err := fs.vfs.Open(c, e.Ino, in.Flags&^(syscall.O_CREAT|syscall.O_EXCL|syscall.O_TRUNC))
	e.Attr = res.Attr
	return e, res, err
}

// recreated answers a resent create with the handle it opened (and the
// file's attributes now).
func (fs *FS) recreated(h *fuse.InHeader, o opened, out *fuse.CreateOut) fuse.Status {
	a, err := fs.vfs.Getattr(ctx(h), meta.Ino(o.h.Ino))
	if err != nil {
		return fs.status("create", err)
	}
	fs.fillEntry(meta.Entry{Ino: meta.Ino(o.h.Ino), Attr: a}, &out.EntryOut)
	fillOpen(o.result(), &out.OpenOut)
	return fuse.OK
}

// Open implements fuse.RawFileSystem.
func (fs *FS) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	defer fs.enterChange()()
	if o, ok := fs.replies.reopened(&in.InHeader); ok {
		fillOpen(o.result(), out)
		return fuse.OK
	}
	c := fs.requestCtx(ctx(&in.InHeader), &in.InHeader, opOpen)
	res, err := fs.vfs.Open(c, meta.Ino(in.NodeId), in.Flags)
	if err != nil {
		return fs.status("open", err)
	}
	if in.Mode&fuse.OPEN_KILL_SUIDGID != 0 { // O_TRUNC by a caller without CAP_FSETID
		if err := fs.vfs.KillSuidgid(c, res.Fh); err != nil {
			fs.vfs.Release(c, res.Fh)
			return fs.status("open", err)
		}
	}
	if !res.KeepCache && !fs.kattrs.holds(meta.Ino(in.NodeId), res.Attr) {
		fs.forgetAttr(in.NodeId)
	}
	fillOpen(res, out)
	fs.replies.kill.fire(opOpen)
	return fuse.OK
}

// forgetAttr drops the kernel's cached attributes and pages of an inode
// that changed since this mount last opened it (close-to-open). Without
// it the kernel keeps the size a stat(2) cached a moment before the open
// until the attribute timeout runs out, and reads of the file stop at
// that older size (fstat shows it too): a file appended to on another
// mount read back cut to its old length. Open skips it when the kernel
// certainly holds the attributes the open read (kattrs.go). Not opening
// with KEEP_CACHE drops the pages, but never the size. The notification is one write to
// /dev/fuse; the kernel asks for fresh attributes on the next read past
// its size or stat. ENOENT (the kernel no longer knows the inode) and
// ENOSYS (a kernel without notifications) need nothing.
func (fs *FS) forgetAttr(ino uint64) {
	if fs.server == nil || fs.opts.AttrTimeout <= 0 {
		return
	}
	_ = fs.server.InodeNotify(ino, 0, 0)
}

func fillOpen(res vfs.OpenResult, out *fuse.OpenOut) {
	out.Fh = uint64(res.Fh)
	if res.KeepCache {
		out.OpenFlags |= fuse.FOPEN_KEEP_CACHE
	}
	if res.DirectIO {
		// Direct writes to one file may run in parallel: the writer
		// orders overlapping writes itself, and the kernel still takes
		// the inode lock for writes that extend the file.
		out.OpenFlags |= fuse.FOPEN_DIRECT_IO | fuse.FOPEN_PARALLEL_DIRECT_WRITES
	}
}

// Read implements fuse.RawFileSystem.
func (fs *FS) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	defer fs.enter()()
	n, err := fs.vfs.Read(ctx(&in.InHeader), vfs.Fh(in.Fh), in.Offset, buf[:min(len(buf), int(in.Size))])
	if err != nil {
		return nil, fs.status("read", err)
	}
	return fuse.ReadResultData(buf[:n]), fuse.OK
}

// Write implements fuse.RawFileSystem. A resent O_APPEND write that the
// journal holds was replayed by this process: it answers its byte count.
func (fs *FS) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	defer fs.enterChange()()
	if r, ok := fs.replies.resent(&in.InHeader); ok {
		return uint32(r.Written), fuse.OK
	}
	c := fs.requestCtx(ctx(&in.InHeader), &in.InHeader, opWrite)
	n, err := fs.vfs.Write(c, vfs.Fh(in.Fh), in.Offset, data)
	if err == nil && in.WriteFlags&fuse.WRITE_KILL_SUIDGID != 0 {
		err = fs.vfs.KillSuidgid(c, vfs.Fh(in.Fh))
	}
	st := fs.status("write", err)
	if st == fuse.OK {
		fs.replies.kill.fire(opWrite)
	}
	return uint32(n), st
}

// Flush implements fuse.RawFileSystem: close(2) returns after this. The
// closing process's POSIX locks on the file go after the data is flushed.
func (fs *FS) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	defer fs.enterChange()()
	st := fs.status("flush", fs.vfs.Flush(ctx(&in.InHeader), vfs.Fh(in.Fh)))
	fs.releasePosix(in)
	return st
}

// Fsync implements fuse.RawFileSystem.
func (fs *FS) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	defer fs.enterChange()()
	return fs.status("fsync", fs.vfs.Fsync(ctx(&in.InHeader), vfs.Fh(in.Fh)))
}

// Release implements fuse.RawFileSystem.
func (fs *FS) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	defer fs.enterChange()()
	fs.releaseFlock(in)
	fs.releaseOFD(in)
	if err := fs.vfs.Release(ctx(&in.InHeader), vfs.Fh(in.Fh)); err != nil {
		fs.status("release", err)
	}
}

// Fallocate implements fuse.RawFileSystem.
func (fs *FS) Fallocate(cancel <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	defer fs.enterChange()()
	return fs.status("fallocate", fs.vfs.Fallocate(ctx(&in.InHeader), vfs.Fh(in.Fh), in.Mode, in.Offset, in.Length))
}

// CopyFileRange implements fuse.RawFileSystem as a metadata-only clone.
func (fs *FS) CopyFileRange(cancel <-chan struct{}, in *fuse.CopyFileRangeIn) (uint32, fuse.Status) {
	defer fs.enterChange()()
	length := min(in.Len, 1<<30) // the reply carries 32 bits; callers loop
	n, err := fs.vfs.CopyFileRange(ctx(&in.InHeader), vfs.Fh(in.FhIn), in.OffIn, vfs.Fh(in.FhOut), in.OffOut, length)
	return uint32(n), fs.status("copy_file_range", err)
}

// Lseek implements fuse.RawFileSystem for SEEK_DATA and SEEK_HOLE (the
// kernel handles the other whences itself).
func (fs *FS) Lseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	defer fs.enter()()
	off, err := fs.vfs.Lseek(ctx(&in.InHeader), vfs.Fh(in.Fh), in.Offset, int(in.Whence))
	if err != nil {
		return fs.status("lseek", err)
	}
	out.Offset = off
	return fuse.OK
}
