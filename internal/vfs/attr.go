package vfs

import (
	"context"
	"syscall"

	"shoal/internal/meta"
)

// SetattrRequest is meta.SetattrRequest plus a size change.
type SetattrRequest struct {
	meta.SetattrRequest
	SetSize bool
	Size    uint64
}

// Lookup finds name in parent, with this mount's pending writes applied.
func (fs *FS) Lookup(ctx context.Context, parent meta.Ino, name string) (meta.Entry, error) {
	if name == "." || name == ".." {
		return fs.lookupDot(ctx, parent, name)
	}
	open := fs.pendingAll()
	e, err := fs.engine.Lookup(ctx, parent, name)
	if err != nil {
		return meta.Entry{}, err
	}
	if p, ok := open[e.Ino]; ok {
		p.apply(&e.Attr)
	}
	return e, nil
}

func (fs *FS) lookupDot(ctx context.Context, dir meta.Ino, name string) (meta.Entry, error) {
	attr, err := fs.engine.Getattr(ctx, dir)
	if err != nil {
		return meta.Entry{}, err
	}
	if name == "." || dir == meta.RootIno {
		return meta.Entry{Ino: dir, Attr: attr}, nil
	}
	pattr, err := fs.engine.Getattr(ctx, attr.Parent)
	if err != nil {
		return meta.Entry{}, err
	}
	return meta.Entry{Ino: attr.Parent, Attr: pattr}, nil
}

// Getattr returns ino's attributes, with this mount's pending writes.
func (fs *FS) Getattr(ctx context.Context, ino meta.Ino) (meta.Attr, error) {
	p, open := fs.pendingOf(ino)
	attr, err := fs.engine.Getattr(ctx, ino)
	if err != nil {
		return meta.Attr{}, err
	}
	if open {
		p.apply(&attr)
	}
	return attr, nil
}

// overlay applies this mount's current view of ino, for attributes the
// engine returned from an operation this mount made itself.
func (fs *FS) overlay(ino meta.Ino, a *meta.Attr) {
	if p, ok := fs.pendingOf(ino); ok {
		p.apply(a)
	}
}

// pendingOf captures the pending view of ino if this mount has it open.
func (fs *FS) pendingOf(ino meta.Ino) (pending, bool) {
	if f := fs.openFile(ino); f != nil {
		return f.pending(), true
	}
	return pending{}, false
}

// pendingAll captures the pending view of every file this mount has open
// (for reads that learn the inode numbers only from the engine).
func (fs *FS) pendingAll() map[meta.Ino]pending {
	fs.mu.Lock()
	files := make([]*file, 0, len(fs.files))
	for _, f := range fs.files {
		files = append(files, f)
	}
	fs.mu.Unlock()
	out := make(map[meta.Ino]pending, len(files))
	for _, f := range files {
		out[f.ino] = f.pending()
	}
	return out
}

// Setattr changes size, mode, owner and times.
func (fs *FS) Setattr(ctx context.Context, ino meta.Ino, req SetattrRequest) (meta.Attr, error) {
	var attr meta.Attr
	var err error
	if req.SetSize {
		if err := fs.engine.Access(ctx, ino, 2); err != nil {
			return meta.Attr{}, err
		}
		f := fs.acquire(ino)
		attr, err = fs.truncate(ctx, f, req.Size)
		_ = fs.release(ctx, f, false /* not an engine open */)
		if err != nil {
			return meta.Attr{}, err
		}
	}
	if req.Valid != 0 {
		// Explicit times must not be overwritten by the commit of writes
		// made before them: commit those first.
		if f := fs.openFile(ino); f != nil && req.Valid&(meta.SetMtime|meta.SetMtimeNow) != 0 {
			if err := f.flush(ctx); err != nil {
				return meta.Attr{}, err
			}
		}
		if attr, err = fs.engine.Setattr(ctx, ino, req.SetattrRequest); err != nil {
			return meta.Attr{}, err
		}
		if f := fs.openFile(ino); f != nil {
			f.setMode(attr.Mode)
		}
	} else if !req.SetSize {
		return fs.Getattr(ctx, ino)
	}
	fs.overlay(ino, &attr)
	return attr, nil
}

// truncate flushes f's writes and sets its length.
func (fs *FS) truncate(ctx context.Context, f *file, length uint64) (meta.Attr, error) {
	if err := f.flush(ctx); err != nil {
		return meta.Attr{}, err
	}
	attr, err := fs.engine.Truncate(ctx, f.ino, length)
	if err != nil {
		return meta.Attr{}, err
	}
	f.forgetChunks(0)
	f.mu.Lock()
	f.length = attr.Length
	f.mu.Unlock()
	return attr, nil
}

// Access checks the caller's access to ino (mask of R_OK/W_OK/X_OK).
func (fs *FS) Access(ctx context.Context, ino meta.Ino, mask uint32) error {
	return fs.engine.Access(ctx, ino, mask)
}

// Statfs returns the usage as seen from ino: inside a tree with a
// directory quota, the quota's limits and usage (engines with
// meta.Quotas); elsewhere the volume's.
func (fs *FS) Statfs(ctx context.Context, ino meta.Ino) (meta.Statfs, error) {
	if q, ok := fs.engine.(meta.Quotas); ok {
		return q.StatfsAt(ctx, ino)
	}
	return fs.engine.Statfs(ctx)
}

// Fallocate allocates, punches or zeroes a range of an open file.
func (fs *FS) Fallocate(ctx context.Context, fh Fh, mode uint32, off, length uint64) error {
	h, err := fs.handle(fh)
	if err != nil {
		return err
	}
	if h.flags&syscall.O_ACCMODE == syscall.O_RDONLY {
		return syscall.EBADF
	}
	f := h.file
	if err := f.flush(ctx); err != nil {
		return err
	}
	attr, err := fs.engine.Fallocate(ctx, f.ino, mode, off, length)
	if err != nil {
		return err
	}
	f.forgetChunks(uint32(off / meta.ChunkSize))
	f.mu.Lock()
	f.length = attr.Length
	f.mu.Unlock()
	return nil
}

// CopyFileRange clones length bytes between open files by reference.
func (fs *FS) CopyFileRange(ctx context.Context, in Fh, inOff uint64, out Fh, outOff uint64, length uint64) (uint64, error) {
	src, err := fs.handle(in)
	if err != nil {
		return 0, err
	}
	dst, err := fs.handle(out)
	if err != nil {
		return 0, err
	}
	if dst.flags&syscall.O_ACCMODE == syscall.O_RDONLY || src.flags&syscall.O_ACCMODE == syscall.O_WRONLY {
		return 0, syscall.EBADF
	}
	if err := src.file.flush(ctx); err != nil {
		return 0, err
	}
	if err := dst.file.flush(ctx); err != nil {
		return 0, err
	}
	n, err := fs.engine.CopyFileRange(ctx, meta.CopyRequest{
		SrcIno: src.file.ino, SrcOff: inOff, DstIno: dst.file.ino, DstOff: outOff, Len: length})
	if err != nil {
		return 0, err
	}
	dst.file.forgetChunks(uint32(outOff / meta.ChunkSize))
	dst.file.mu.Lock()
	dst.file.length = max(dst.file.length, outOff+n)
	dst.file.mu.Unlock()
	return n, nil
}

// setMode records the file's mode after a change this mount made.
func (f *file) setMode(m uint16) {
	f.mu.Lock()
	f.mode = m
	f.mu.Unlock()
}

// KillSuidgid clears the set-id bits of fh's file that a write or
// open(O_TRUNC) by the caller takes away (meta.KillSuidgid), before the
// request is answered: the kernel leaves that to the mount
// (FUSE_HANDLE_KILLPRIV_V2) and flags the requests that need it. The
// engine is asked only when the mode this mount knows (its last open, or
// its own changes since) holds set-id bits, so a flagged write costs
// nothing otherwise; bits another mount set after this open are seen at
// the next open (close-to-open, as the rest of the attributes).
func (fs *FS) KillSuidgid(ctx context.Context, fh Fh) error {
	h, err := fs.handle(fh)
	if err != nil {
		return err
	}
	f := h.file
	f.mu.Lock()
	m := f.mode
	f.mu.Unlock()
	if m&(meta.ModeSetuid|meta.ModeSetgid) == 0 {
		return nil
	}
	a, err := fs.engine.Setattr(ctx, f.ino, meta.SetattrRequest{Valid: meta.SetKillSuidgid})
	if err != nil {
		return err
	}
	f.setMode(a.Mode)
	return nil
}
