package vfs

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"

	"shoal/internal/data"
	"shoal/internal/journal"
	"shoal/internal/meta"
)

// handle is one open file description.
type handle struct {
	fh     Fh
	file   *file
	flags  uint32
	reader *data.Reader
	// direct: opened with O_DIRECT. Every read first asks the engine for
	// the inode's mtime and length and drops the cached slice lists when
	// they moved since this handle last looked (seen), so a description
	// opened before another mount's fsync sees that data (the destination
	// of a live migration opens the image before the source stops).
	// Checking the attributes costs one small read; listing every chunk
	// afresh would decode the whole slice list of a fragmented chunk.
	direct bool
	seen   stamp // guarded by file.mu
	// lockEpoch is the session epoch in which a lock was first taken
	// through this handle (0: none): its writes, fsyncs and lock calls
	// are fenced (fence.go).
	lockEpoch atomic.Uint64
	// tracked: the engine counted this handle's open (meta.OpenTracker);
	// its release owes the engine a Release.
	tracked bool
	// request is the kernel request that opened it (WithRequest) and res
	// what the open answered, kept in the journal for the kernel's
	// resend of that request (takeover.go).
	request uint64
	res     OpenResult
}

// OpenResult says how the kernel may cache an opened file.
type OpenResult struct {
	Fh Fh
	// KeepCache: the file is unchanged since this mount last cached its
	// pages, so the kernel page cache may be kept.
	KeepCache bool
	// DirectIO: the kernel should send every read and write to the file
	// system, bypassing its page cache: opened with O_DIRECT, or with
	// O_APPEND on a file that changed since this mount last opened it.
	DirectIO bool
	// Attr are the inode's attributes as the open read them (after
	// O_TRUNC); the zero Attr when not known (a resent open).
	Attr meta.Attr
}

// Create creates (or, without O_EXCL, opens an existing) regular file and
// opens it with flags.
func (fs *FS) Create(ctx context.Context, parent meta.Ino, name string, mode uint32, flags uint32) (meta.Entry, OpenResult, error) {
	e, err := fs.engine.Mknod(ctx, meta.MknodRequest{
		Parent: parent, Name: name, Type: meta.TypeFile, Mode: uint16(mode & 07777),
		Exclusive: flags&syscall.O_EXCL != 0, Open: fs.tracker != nil, Reserved: fs.reserve(ctx),
	})
	if err := committed(ctx, err); err != nil {
		return meta.Entry{}, OpenResult{}, err
	}
	// A file this call created has no xattrs but what a default ACL gave
	// it: the kernel's check of security.capability before the first
	// write needs no engine read (cached as of this open, as caps does
	// after a read).
	known := meta.Opened{NoXattrs: flags&syscall.O_EXCL != 0}
	res, err := fs.openInode(ctx, e.Ino, e.Attr, flags, fs.tracker != nil, known, 0)
	if err == nil {
		e.Attr = res.Attr
	}
	return e, res, err
}

// Open opens an existing inode with flags (O_RDONLY/O_WRONLY/O_RDWR,
// O_TRUNC, O_APPEND...). Permission checks are the engine's (Access) or
// the kernel's.
//
// With a meta.OpenTracker engine, one engine call reads the attributes,
// checks access and records the open, so that the file outlives an
// unlink on another mount until this handle's Release.
func (fs *FS) Open(ctx context.Context, ino meta.Ino, flags uint32) (OpenResult, error) {
	if fs.tracker != nil {
		// What the open learnt beside the attributes (no xattrs, the
		// first chunk's list) is as of the same instant: the kernel's
		// check of security.capability before the first write, and the
		// first read, need no engine read.
		var o meta.Opened
		mark := fs.listChanges.Load()
		attr, err := fs.tracker.Open(meta.WithOpened(ctx, &o), ino, accessMask(flags))
		if err != nil {
			return OpenResult{}, err
		}
		return fs.openInode(ctx, ino, attr, flags, true, o, mark)
	}
	attr, err := fs.engine.Getattr(ctx, ino)
	if err != nil {
		return OpenResult{}, err
	}
	if attr.Type == meta.TypeDir && flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		return OpenResult{}, syscall.EISDIR
	}
	if err := fs.engine.Access(ctx, ino, accessMask(flags)); err != nil {
		return OpenResult{}, err
	}
	return fs.openInode(ctx, ino, attr, flags, false, meta.Opened{}, 0)
}

func accessMask(flags uint32) uint32 {
	switch flags & syscall.O_ACCMODE {
	case syscall.O_WRONLY:
		return 2
	case syscall.O_RDWR:
		return 6
	}
	if flags&syscall.O_TRUNC != 0 {
		return 6
	}
	return 4
}

// openInode registers a handle, applies O_TRUNC and decides page caching.
// tracked says the engine counted the open (see handle.tracked); known is
// what the engine learnt with attr, as of the same instant, and mark the
// listChanges read before (see refreshKnown).
func (fs *FS) openInode(ctx context.Context, ino meta.Ino, attr meta.Attr, flags uint32, tracked bool, known meta.Opened, mark uint64) (OpenResult, error) {
	f := fs.acquire(ino)
	if flags&syscall.O_TRUNC != 0 && attr.Type == meta.TypeFile && attr.Length > 0 {
		a, err := fs.truncate(ctx, f, 0)
		if err != nil {
			_ = fs.release(ctx, f, tracked)
			return OpenResult{}, err
		}
		attr, known.HasChunk0 = a, false
	}
	f.refreshKnown(attr, known, mark)
	direct := flags&syscall.O_DIRECT != 0
	h := &handle{file: f, flags: flags, reader: fs.data.NewReader(ino), direct: direct, tracked: tracked, request: requestOf(ctx)}
	h.reader.SetList(f.chunk) // read-ahead continues into the next chunk
	fs.mu.Lock()
	fs.nextFh++
	h.fh = fs.nextFh
	fs.handles[h.fh] = h
	j := fs.journal
	keep := fs.stamps[ino] == stamp{attr.Mtime, attr.Length} && !fs.cfg.Strict
	if len(fs.stamps) > 1<<16 {
		clear(fs.stamps)
	}
	fs.stamps[ino] = stamp{attr.Mtime, attr.Length}
	// The kernel places an O_APPEND write where it believes the file
	// ends, without asking for fresh attributes first: after another
	// mount's close it would write over that mount's data or leave a
	// hole (Write moves it to the real end). Direct I/O keeps the kernel's
	// page cache from holding those bytes at the offset it thought.
	appendStale := flags&syscall.O_APPEND != 0 && !keep
	h.res = OpenResult{Fh: h.fh, KeepCache: keep && !direct, DirectIO: direct || appendStale}
	fs.mu.Unlock()
	if j != nil { // before the kernel learns the handle
		fs.noteJournal(j.Open(uint64(h.fh), h.journaled()))
	}
	fs.warm(h, attr)
	res := h.res
	res.Attr = attr
	return res, nil
}

// journaled is h as the journal records it.
func (h *handle) journaled() journal.Handle {
	return journal.Handle{Ino: uint64(h.file.ino), Flags: h.flags, Tracked: h.tracked, Locked: h.lockEpoch.Load() != 0,
		Request: h.request, KeepCache: h.res.KeepCache, DirectIO: h.res.DirectIO}
}

func (fs *FS) handle(fh Fh) (*handle, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	h, ok := fs.handles[fh]
	if !ok {
		return nil, syscall.EBADF
	}
	return h, nil
}

// Read reads up to len(buf) bytes at off; it returns fewer at end of file.
// This mount's buffered writes are read through, not flushed first.
func (fs *FS) Read(ctx context.Context, fh Fh, off uint64, buf []byte) (int, error) {
	h, err := fs.handle(fh)
	if err != nil {
		return 0, err
	}
	f := h.file
	f.mu.Lock()
	length, w := f.length, f.writer
	f.mu.Unlock()
	if h.direct {
		if length, err = fs.directCheck(ctx, h); err != nil {
			return 0, err
		}
	}
	if off >= length {
		return 0, nil
	}
	buf = buf[:min(uint64(len(buf)), length-off)]
	n := 0
	for n < len(buf) {
		pos := off + uint64(n)
		index, chunkPos := uint32(pos/meta.ChunkSize), uint32(pos%meta.ChunkSize)
		part := buf[n:min(len(buf), n+int(meta.ChunkSize-chunkPos))]
		if err := fs.readChunk(ctx, h, w, index, chunkPos, part); err != nil {
			return n, err
		}
		n += len(part)
	}
	return n, nil
}

// readChunk fills part from one chunk, retrying once with a fresh slice
// list if a block is gone (the list was stale).
func (fs *FS) readChunk(ctx context.Context, h *handle, w *data.Writer, index, pos uint32, part []byte) error {
	for attempt := 0; ; attempt++ {
		_, err := h.reader.ReadThrough(ctx, w, index, h.file.chunk, pos, part)
		if err == nil || attempt > 0 || !isMissingObject(err) {
			return err
		}
		h.file.forgetChunks(index)
	}
}

// directCheck starts a direct read: it drops the file's cached slice
// lists if the engine's mtime or length moved since h last looked (one
// engine read shared by the reads in flight: attrRounds), and
// returns the length to read against (the engine's, or this mount's own
// if it has written further).
func (fs *FS) directCheck(ctx context.Context, h *handle) (uint64, error) {
	f := h.file
	attr, err := f.attrs.get(ctx, func(ctx context.Context) (meta.Attr, error) {
		return fs.engine.Getattr(ctx, f.ino)
	})
	if err != nil {
		return 0, err
	}
	now := stamp{attr.Mtime, attr.Length}
	f.mu.Lock()
	changed := h.seen != now
	f.mu.Unlock()
	if changed {
		f.forgetChunks(0)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	h.seen = now
	f.length = max(f.length, attr.Length)
	return f.length, nil
}

// Write writes p at off, or for an O_APPEND descriptor at the end of the
// file as this mount knows it: the kernel resolves append offsets from
// the size it cached, which trails other mounts' appends and truncates
// until the attribute timeout (the end is the same whenever the kernel's
// size is current, and the kernel sends one append's requests in order).
func (fs *FS) Write(ctx context.Context, fh Fh, off uint64, p []byte) (int, error) {
	h, err := fs.handle(fh)
	if err != nil {
		return 0, err
	}
	if h.flags&syscall.O_ACCMODE == syscall.O_RDONLY {
		return 0, syscall.EBADF
	}
	if err := fs.fence.check(h.lockEpoch.Load()); err != nil {
		return 0, err
	}
	f := h.file
	if fs.journal != nil {
		// Recorded before it is acknowledged, under the file's journal
		// lock so that a flush's mark never falls between the record and
		// the buffered write (takeover.go).
		f.jmu.RLock()
		defer f.jmu.RUnlock()
	}
	if h.flags&syscall.O_APPEND != 0 {
		off = f.appendEnd()
	}
	if fs.journal != nil {
		seq, err := fs.journalWrite(ctx, h, off, p)
		if err != nil {
			return 0, fmt.Errorf("vfs: journal: %w: %w", err, syscall.EIO)
		}
		if testHookJournaled != nil {
			testHookJournaled()
		}
		f.journaled.Store(seq)
	}
	if err := f.getWriter().Write(ctx, off, p); err != nil {
		return 0, err
	}
	f.mu.Lock()
	f.length = max(f.length, off+uint64(len(p)))
	f.mtime = meta.Now()
	f.mu.Unlock()
	return len(p), nil
}

// Flush is called on every close(2) of a descriptor: it stores and commits
// all buffered writes of the inode (close-to-open).
func (fs *FS) Flush(ctx context.Context, fh Fh) error {
	h, err := fs.handle(fh)
	if err != nil {
		return err
	}
	return h.file.flush(ctx)
}

// Fsync makes all writes of the inode durable in the store and engine,
// also against power loss: after the flush, an engine that commits lazily
// to disk (meta.Syncer: SQLite's WAL) is synced.
//
// Through a descriptor that holds locks, it also fails (EIO) unless the
// locks were still this mount's when the data landed (fence.go).
func (fs *FS) Fsync(ctx context.Context, fh Fh) error {
	if err := fs.Flush(ctx, fh); err != nil {
		return err
	}
	if h, err := fs.handle(fh); err == nil {
		if err := fs.fence.check(h.lockEpoch.Load()); err != nil {
			return err
		}
	}
	if s, ok := fs.engine.(meta.Syncer); ok {
		return s.Sync(ctx)
	}
	return nil
}

// Release closes a handle; the inode's last one flushes and, for an
// unlinked inode, purges it.
func (fs *FS) Release(ctx context.Context, fh Fh) error {
	fs.mu.Lock()
	h, ok := fs.handles[fh]
	delete(fs.handles, fh)
	j := fs.journal
	fs.mu.Unlock()
	if !ok {
		return syscall.EBADF
	}
	err := fs.release(ctx, h.file, h.tracked)
	if j != nil {
		// After the release: a successor taking over before this record
		// adopts the handle again, and the kernel's resend of the
		// release releases it there, engine count and all.
		fs.noteJournal(j.Release(uint64(fh)))
	}
	return err
}
