package vfs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"

	"shoal/internal/data"
	"shoal/internal/meta"
	"shoal/internal/object"
)

// file is the state of an inode with open handles in this mount.
type file struct {
	ino meta.Ino
	fs  *FS

	mu     sync.Mutex
	refs   int // open handles
	orphan bool
	writer *data.Writer
	length uint64 // best known length: engine's at open, then own changes
	mtime  int64  // latest write time not yet committed (0 = none)
	chunks map[uint32][]meta.Slice
	// chunkGen counts invalidations of chunks, so that a list read from
	// the engine before a commit is not cached after it.
	chunkGen uint64
	// loading holds the engine reads of chunk lists in flight, which
	// readers of the same generation share (an open's warm-up and the
	// read after it).
	loading map[uint32]*chunkLoad
	// attrs shares the engine reads of concurrent direct reads.
	attrs attrRounds

	// lockEpoch is the oldest session epoch in which a lock was taken
	// through one of the file's handles (0: none), kept until the last
	// close: its commits are fenced (fence.go).
	lockEpoch uint64

	// jmu orders journaled writes (read-locked from record to buffer)
	// against a flush's journal mark (locked); journaled is the sequence
	// number of the file's latest journaled write, barrier the mark of
	// its latest barrier (takeover.go).
	jmu       sync.RWMutex
	journaled atomic.Uint64
	barrier   atomic.Uint64

	// closing is closed once close has committed (or failed to commit)
	// what the writer held, closeErr saying which; nil before close.
	closing  chan struct{}
	closeErr error

	// mode is the file's mode as this mount knows it (at the last open,
	// then its own changes): KillSuidgid asks the engine only when it
	// holds set-id bits.
	mode uint16

	capsLoaded bool // security.capability fetched since the last open
	capsValue  []byte
	capsErr    error
}

type stamp struct {
	mtime  int64
	length uint64
}

// acquire returns the open-file state of ino with one more reference.
func (fs *FS) acquire(ino meta.Ino) *file {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f, ok := fs.files[ino]
	if !ok {
		f = &file{ino: ino, fs: fs, chunks: map[uint32][]meta.Slice{}}
		fs.files[ino] = f
	}
	f.refs++
	return f
}

// release drops a reference; the last one flushes, closes and forgets the
// file. With tracked (an open the engine counted) the engine is told
// next, after the flush: its last release may purge an orphan that
// another mount unlinked. Last, an inode this mount unlinked meanwhile is
// purged (a no-op while another session holds it open).
func (fs *FS) release(ctx context.Context, f *file, tracked bool) error {
	fs.mu.Lock()
	f.refs--
	last := f.refs == 0
	if last {
		delete(fs.files, f.ino)
		fs.closing[f] = struct{}{} // Sync waits for its writes (FS.Sync)
	}
	fs.mu.Unlock()
	var err error
	if last {
		err = f.close(ctx)
		fs.mu.Lock()
		delete(fs.closing, f)
		fs.mu.Unlock()
	}
	if tracked {
		if rerr := fs.tracker.Release(ctx, f.ino); rerr != nil && err == nil {
			err = rerr
		}
	}
	if last && f.orphan {
		if perr := fs.engine.Purge(ctx, f.ino); perr != nil && err == nil {
			err = perr
		}
	}
	return err
}

// openFile returns the open state of ino, or nil.
func (fs *FS) openFile(ino meta.Ino) *file {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.files[ino]
}

// refresh loads the engine's view at open(2): the length, and an empty
// slice-list cache, so that closes on other machines become visible.
func (f *file) refresh(attr meta.Attr) { f.refreshKnown(attr, meta.Opened{}, 0) }

// refreshKnown is refresh with what the engine learnt with attr (an open:
// meta.Opened), which the file keeps as it would an engine read made then.
// The first chunk's list is kept only if no slice list of this mount
// changed since mark (listChanges read before the engine read): a commit
// of this mount that landed after the read would be missing from it, and
// its data no longer painted from the writer.
func (f *file) refreshKnown(attr meta.Attr, known meta.Opened, mark uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.chunks = map[uint32][]meta.Slice{}
	if known.HasChunk0 && f.fs.listChanges.Load() == mark {
		f.chunks[0] = known.Chunk0
	}
	f.chunkGen++
	f.capsLoaded = known.NoXattrs
	if known.NoXattrs {
		f.capsValue, f.capsErr = nil, syscall.ENODATA
	}
	f.mode = attr.Mode
	if f.writer == nil || !f.writer.Dirty() {
		f.length = attr.Length
	} else {
		f.length = max(attr.Length, f.writer.Extent())
	}
}

// getWriter returns the file's writer, creating it on first use.
func (f *file) getWriter() *data.Writer {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.writer == nil {
		f.writer = f.fs.data.NewWriter(f.ino, f.fs.engine.NewSliceID, f.commit)
	}
	return f.writer
}

// commit records stored slices in the engine, in one transaction. The
// data layer calls it in write order, possibly from its own goroutines.
//
// The commit of a file locked through this mount runs within the lease of
// its locks, and not at all outside it: data written under a lock must
// not land after another mount may have taken the lock (fence.go).
func (f *file) commit(ctx context.Context, ws []meta.SliceWrite) error {
	f.mu.Lock()
	epoch := f.lockEpoch
	f.mu.Unlock()
	ctx, cancel, err := f.fs.fence.guard(ctx, epoch)
	if err != nil {
		return fmt.Errorf("vfs: inode %d: not committing writes to a file whose locks this mount may have lost: %w", f.ino, err)
	}
	defer cancel()
	res, err := f.fs.engine.WriteSlices(ctx, f.ino, ws)
	if err != nil {
		return err
	}
	f.mu.Lock()
	for index := range res.Counts {
		delete(f.chunks, index)
	}
	f.chunkGen++
	f.fs.listChanges.Add(1)
	f.length = max(f.length, res.Attr.Length)
	f.mu.Unlock()
	for index, n := range res.Counts {
		if n >= f.fs.cfg.CompactThreshold {
			f.fs.compactor.schedule(f.ino, index)
		}
	}
	return nil
}

// flush stores and commits everything written so far. On a file being
// closed (FS.Sync meets one) that is what the close commits: flush waits
// for it and returns its outcome, since a writer closed under the flush
// fails it ("writer closed") with nothing left to flush, and a flush that
// found the writer already gone would report success, and write a
// barrier, before the close's commit is done.
func (f *file) flush(ctx context.Context) error {
	mark := f.journalMark()
	f.mu.Lock()
	w, closing := f.writer, f.closing
	f.mu.Unlock()
	if closing != nil {
		return f.awaitClose(ctx, closing)
	}
	if w == nil || !w.Dirty() {
		f.journalBarrier(mark)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, f.fs.cfg.FlushTimeout)
	defer cancel()
	if err := w.Flush(ctx); err != nil {
		f.mu.Lock()
		closing = f.closing
		f.mu.Unlock()
		if closing != nil {
			return f.awaitClose(ctx, closing)
		}
		return fmt.Errorf("vfs: flush inode %d: %w", f.ino, err)
	}
	f.mu.Lock()
	f.mtime = 0
	f.mu.Unlock()
	f.journalBarrier(mark)
	return nil
}

// awaitClose waits for the close under way (closing) and returns its
// outcome.
func (f *file) awaitClose(ctx context.Context, closing chan struct{}) error {
	select {
	case <-closing:
	case <-ctx.Done():
		return fmt.Errorf("vfs: flush inode %d: waiting for its close: %w", f.ino, ctx.Err())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closeErr
}

// close flushes and releases the writer.
func (f *file) close(ctx context.Context) error {
	mark := f.journalMark()
	f.mu.Lock()
	w := f.writer
	f.writer = nil
	closing := make(chan struct{})
	f.closing = closing
	f.mu.Unlock()
	err := f.closeWriter(ctx, w, mark)
	f.mu.Lock()
	f.closeErr = err
	f.mu.Unlock()
	close(closing)
	return err
}

// closeWriter is close's work on w.
func (f *file) closeWriter(ctx context.Context, w *data.Writer, mark uint64) error {
	if w == nil {
		f.journalBarrier(mark)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, f.fs.cfg.FlushTimeout)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		return err
	}
	f.journalBarrier(mark)
	return nil
}

// chunkLoad is one engine read of a chunk list, started in generation
// gen.
type chunkLoad struct {
	gen  uint64
	done chan struct{}
	list []meta.Slice
	err  error
}

// chunk returns the slice list of chunk index, cached until the next open
// or own change. A caller finding a read of the list in flight that began
// in the current generation waits for it rather than read it again: it
// began after every invalidation the caller knows of (a commit
// invalidates before Pending drops its slices), so it is as fresh as a
// read of the caller's own.
func (f *file) chunk(ctx context.Context, index uint32) ([]meta.Slice, error) {
	f.mu.Lock()
	s, ok := f.chunks[index]
	gen := f.chunkGen
	l := f.loading[index]
	if ok {
		f.mu.Unlock()
		return s, nil
	}
	if l != nil && l.gen == gen {
		f.mu.Unlock()
		select {
		case <-l.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if l.err == nil {
			return l.list, nil
		}
		// Its context may have ended (a warm-up's, at unmount): read.
		return f.fs.engine.ReadChunk(ctx, f.ino, index)
	}
	l = &chunkLoad{gen: gen, done: make(chan struct{})}
	if f.loading == nil {
		f.loading = map[uint32]*chunkLoad{}
	}
	f.loading[index] = l
	f.mu.Unlock()
	l.list, l.err = f.fs.engine.ReadChunk(ctx, f.ino, index)
	f.mu.Lock()
	if f.loading[index] == l {
		delete(f.loading, index)
	}
	if l.err == nil && f.chunkGen == gen {
		f.chunks[index] = l.list
	}
	f.mu.Unlock()
	close(l.done)
	return l.list, l.err
}

// warm starts loading, in the background, what the first read of handle
// h, just opened on a file of the given length, will need: the list of
// chunk 0 and its small blocks (data.Reader.Warm). Only for handles whose
// reads come to this mount soon: readable, not O_DIRECT (whose first read
// drops the lists) nor direct I/O, and not with the kernel's pages kept
// (it may read nothing).
func (fs *FS) warm(h *handle, attr meta.Attr) {
	if attr.Type != meta.TypeFile || attr.Length == 0 || h.flags&syscall.O_ACCMODE == syscall.O_WRONLY ||
		h.direct || h.res.KeepCache || h.res.DirectIO {
		return
	}
	h.reader.Warm(h.file.chunk, attr.Length)
}

// forgetChunks drops cached slice lists (all of them when all is set,
// else from index on).
func (f *file) forgetChunks(from uint32) {
	f.mu.Lock()
	for i := range f.chunks {
		if i >= from {
			delete(f.chunks, i)
		}
	}
	f.chunkGen++
	f.fs.listChanges.Add(1)
	f.mu.Unlock()
}

// pending is this mount's unflushed view of an open file: its length and
// the time of its last uncommitted write. It is captured BEFORE the engine
// is read and applied after: a commit (and the release of the file) racing
// with the read could otherwise leave a reply showing neither the pending
// write nor its commit, and the kernel would take that older size as news
// (an O_APPEND would then write over data).
type pending struct {
	length uint64
	mtime  int64
}

// pending captures f's view.
func (f *file) pending() pending {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := pending{length: f.length, mtime: f.mtime}
	if f.writer != nil {
		p.length = max(p.length, f.writer.Extent())
	}
	return p
}

// apply lays p over attributes read from the engine.
func (p pending) apply(a *meta.Attr) {
	if a.Type != meta.TypeFile {
		return
	}
	a.Length = max(a.Length, p.length)
	if p.mtime > a.Mtime {
		a.Mtime, a.Ctime = p.mtime, max(a.Ctime, p.mtime)
	}
}

// appendEnd is where an O_APPEND write goes: the end of the file as this
// mount knows it (the engine's length at open, then this mount's own
// writes and truncates). The kernel places appends at the size it cached,
// which after another mount's close may be older, shorter or longer.
func (f *file) appendEnd() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	end := f.length
	if f.writer != nil {
		end = max(end, f.writer.Extent())
	}
	return end
}

// isErrno reports whether err is an expected POSIX outcome.
func isErrno(err error) bool {
	var errno syscall.Errno
	return errors.As(err, &errno)
}

// isMissingObject reports whether err is a block that is gone from the
// store, which a stale slice list can cause.
func isMissingObject(err error) bool { return errors.Is(err, object.ErrNotExist) }
