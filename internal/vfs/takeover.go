package vfs

import (
	"context"
	"fmt"
	"syscall"

	"shoal/internal/journal"
	"shoal/internal/meta"
)

// Takeover: a mount outlives its serving process.
//
// With a journal attached (AttachJournal), the FS records in it, before
// the kernel hears back, every handle it opens and releases, every lock
// taken through a handle, and every write it acknowledges; after a flush
// commits a file's writes, a barrier marks the earlier records dead. A
// successor process — started after a crash, or for an upgrade — reads
// the journal (journal.Recover), resumes the same engine session (so the
// locks and the open-file records other mounts see stay where they are),
// and calls Adopt: the handles come back under their old numbers, the
// live writes are applied again in their order and committed. Only then
// does it serve the kernel, which resends the requests the dead process
// never answered.
//
// A write is recorded and buffered under the file's jmu read lock; a
// flush takes the journal's mark under the write lock, so every write
// recorded before the mark is in the buffer the flush commits, and the
// barrier written after it covers exactly those.
//
// Requests answered twice. The kernel resends what the dead process read
// but did not answer; an open or an O_APPEND write it had recorded must
// not run again (a second handle the kernel never releases; the bytes
// appended after their replay). With the request's id (WithRequest) in
// their records, the adaptor answers the resend instead, from what
// journal.Recover returns; the same id marks the intents of name and
// xattr changes (intent.go). A release, unlike the rest, is recorded after
// it is done: a successor that finds the handle still open adopts it, and
// the resent release releases it there (recorded first, a crash before
// the engine heard of the release would leave the open counted for good).

// AttachJournal makes fs record its handles and writes in j from now on.
// Call it before serving, after Adopt.
func (fs *FS) AttachJournal(j *journal.Journal) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.journal = j
}

// SessionID returns the engine session this mount works for (0: none).
func (fs *FS) SessionID() meta.SessionID {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.session
}

// State returns the handles fs holds, as a journal checkpoint.
func (fs *FS) State() journal.State {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	st := journal.State{Session: uint64(fs.session), NextFh: uint64(fs.nextFh),
		Handles: map[uint64]journal.Handle{}, Dirs: map[uint64]uint64{}}
	for fh, h := range fs.handles {
		st.Handles[uint64(fh)] = h.journaled()
	}
	for fh, d := range fs.dirs {
		st.Dirs[uint64(fh)] = uint64(d.ino)
	}
	return st
}

// requestKey is the context key of WithRequest.
type requestKey struct{}

// WithRequest returns ctx for an operation that answers the kernel
// request id (FUSE's unique id). An open and an O_APPEND write record it
// in the journal with their outcome, so that a successor answers the
// kernel's resend of the request after a crash with the handle adopted
// or the byte count of the write replayed, instead of opening again or
// appending the bytes a second time (package journal, replies.go); a
// name or xattr change records its intent under it (intent.go).
func WithRequest(ctx context.Context, id uint64) context.Context {
	return context.WithValue(ctx, requestKey{}, id)
}

// requestOf returns the request id WithRequest put in ctx (0: none).
func requestOf(ctx context.Context) uint64 {
	id, _ := ctx.Value(requestKey{}).(uint64)
	return id
}

// journalWrite records a write of p at off through h: an O_APPEND
// write answering a kernel request with its request id.
func (fs *FS) journalWrite(ctx context.Context, h *handle, off uint64, p []byte) (uint64, error) {
	ino := uint64(h.file.ino)
	if req := requestOf(ctx); req != 0 && h.flags&syscall.O_APPEND != 0 {
		return fs.journal.Append(ino, off, req, p)
	}
	return fs.journal.Write(ino, off, p)
}

// testHookJournaled, if set (tests), runs in Write between a write's
// journal record and its buffering.
var testHookJournaled func()

// noteJournal reports a failed journal record once: the mount keeps
// serving, but a successor could not take over cleanly.
func (fs *FS) noteJournal(err error) {
	if err != nil {
		fs.jlogged.Do(func() {
			fs.log.Error("the mount's journal cannot be written; a restart of this mount's server would lose track of open files", "err", err)
		})
	}
}

// journalMark returns the journal's mark for a flush of f (0: nothing of
// f is journaled since its last barrier). It always takes jmu, so it
// waits for the writes in flight between their record and their
// buffering: such a write has not yet stored f.journaled, and a flush
// that skipped it could let a journal rotation delete its only record.
func (f *file) journalMark() uint64 {
	j := f.fs.journal
	if j == nil {
		return 0
	}
	f.jmu.Lock()
	defer f.jmu.Unlock()
	if n := f.journaled.Load(); n == 0 || n < f.barrier.Load() {
		return 0
	}
	return j.Mark()
}

// journalBarrier records that f's writes before mark are committed.
func (f *file) journalBarrier(mark uint64) {
	if mark == 0 {
		return
	}
	if err := f.fs.journal.Barrier(uint64(f.ino), mark); err != nil {
		f.fs.noteJournal(err)
		return
	}
	f.barrier.Store(mark)
}

// adoptCtx is the identity adopted handles and writes act with: they
// were authorized when the previous process accepted them.
func adoptCtx(ctx context.Context) context.Context {
	return meta.WithCred(ctx, meta.Cred{Trusted: true})
}

// Adopt takes over what a previous server process of this mount left in
// st: its handles (under their numbers; the engine records their opens
// again in the session BeginSession resumed) and its acknowledged writes
// that were not committed, applied in order and committed before it
// returns; then the engine drops its records of files the previous
// process had released (meta.OpenAdopter: not before the writes are
// committed, since such a record may be what keeps an orphan they write
// to). Handles through which locks were taken keep them if the session
// was resumed; if it was lost meanwhile their locks are gone and they fail
// as fence.go says. An inode that no longer exists is skipped (logged).
func (fs *FS) Adopt(ctx context.Context, st journal.State) error {
	ctx = adoptCtx(ctx)
	epoch := fs.fence.current()
	for fh, h := range st.Handles {
		if err := fs.adoptHandle(ctx, Fh(fh), h, epoch); err != nil {
			fs.log.Warn("takeover: an open file is gone; its descriptor will fail with EBADF", "fh", fh, "inode", h.Ino, "err", err)
		}
	}
	for fh, ino := range st.Dirs {
		attr, err := fs.engine.Getattr(ctx, meta.Ino(ino))
		if err != nil {
			continue
		}
		parent := attr.Parent
		if meta.Ino(ino) == meta.RootIno || parent == 0 {
			parent = meta.Ino(ino)
		}
		fs.mu.Lock()
		fs.dirs[Fh(fh)] = &dirStream{ino: meta.Ino(ino), parent: parent, start: 2}
		fs.mu.Unlock()
	}
	fs.mu.Lock()
	fs.nextFh = max(fs.nextFh, Fh(st.NextFh))
	fs.mu.Unlock()
	if fs.resumeLost && epoch != 0 {
		fs.fence.lose()
	}
	if err := fs.replay(ctx, st.Writes); err != nil {
		return err
	}
	if err := fs.Sync(ctx); err != nil {
		return err
	}
	if a, ok := fs.tracker.(meta.OpenAdopter); ok {
		// The records the previous process kept of files it had
		// released: nobody else would drop them before the session ends.
		if err := a.Adopted(ctx); err != nil {
			fs.log.Warn("takeover: cannot list the session's open records; those of files closed before the takeover stay until the mount ends", "err", err)
		}
	}
	return nil
}

// Salvage takes over the acknowledged writes a journal of an earlier
// mount of this volume holds, when that mount's kernel connection is gone
// (its supervisor died with its server): they go back into the files'
// write buffers, in order, before the mount serves, and are committed in
// the background as buffered writes are, so a store that is slow or full
// does not keep the mount from coming up (a write committed later than
// one made through the new mount cannot overwrite it: each file's writes
// commit in order). done, if set, is called with the outcome once every
// salvaged file is committed. The journal's handles and locks are not
// adopted: they belong to the engine session st names, whose open-file
// records and locks are released when the session is reclaimed.
func (fs *FS) Salvage(ctx context.Context, st journal.State, done func(error)) error {
	ctx = adoptCtx(ctx)
	files, err := fs.rebuffer(ctx, st.Writes)
	if err != nil {
		return err
	}
	fs.settling.Add(1)
	go func() {
		defer fs.settling.Done()
		err := fs.settle(context.WithoutCancel(ctx), files)
		if done != nil {
			done(err)
		}
	}()
	return nil
}

func (fs *FS) adoptHandle(ctx context.Context, fh Fh, h journal.Handle, epoch uint64) error {
	ino := meta.Ino(h.Ino)
	var attr meta.Attr
	var err error
	tracked := h.Tracked && fs.tracker != nil
	if tracked {
		attr, err = fs.tracker.Open(ctx, ino, 0)
	} else {
		attr, err = fs.engine.Getattr(ctx, ino)
	}
	if err != nil {
		return err
	}
	f := fs.acquire(ino)
	f.refresh(attr)
	hd := &handle{fh: fh, file: f, flags: h.Flags, reader: fs.data.NewReader(ino), direct: h.Flags&syscall.O_DIRECT != 0, tracked: tracked,
		request: h.Request, res: OpenResult{Fh: fh, KeepCache: h.KeepCache, DirectIO: h.DirectIO}}
	hd.reader.SetList(f.chunk)
	if h.Locked && epoch != 0 {
		fs.markLocked(hd, epoch)
	}
	fs.mu.Lock()
	fs.handles[fh] = hd
	fs.mu.Unlock()
	return nil
}

// replay applies acknowledged writes again, each file's in order, and
// commits them.
func (fs *FS) replay(ctx context.Context, writes []journal.Write) error {
	files, err := fs.rebuffer(ctx, writes)
	if err != nil {
		return err
	}
	return fs.settle(ctx, files)
}

// rebuffer puts acknowledged writes back into their files' write
// buffers, each file's in order; files that are gone are skipped. The
// files returned are held open until settle.
func (fs *FS) rebuffer(ctx context.Context, writes []journal.Write) ([]*file, error) {
	touched := map[meta.Ino]*file{}
	var files []*file
	for _, w := range writes {
		ino := meta.Ino(w.Ino)
		f, ok := touched[ino]
		if !ok {
			attr, err := fs.engine.Getattr(ctx, ino)
			if err != nil {
				fs.log.Warn("takeover: not replaying writes to a file that is gone", "inode", ino, "err", err)
				touched[ino] = nil
				continue
			}
			f = fs.acquire(ino)
			f.refresh(attr)
			touched[ino] = f
			files = append(files, f)
		}
		if f == nil {
			continue
		}
		if err := fs.rewrite(ctx, f, w); err != nil {
			return files, fmt.Errorf("takeover: replaying a write to inode %d: %w", ino, err)
		}
		f.mu.Lock()
		f.length = max(f.length, w.Off+uint64(len(w.Data)))
		f.mtime = meta.Now()
		f.mu.Unlock()
	}
	return files, nil
}

// rewrite buffers w again, recorded in this mount's journal (if one is
// attached) as a write through the mount would be (handle.go).
func (fs *FS) rewrite(ctx context.Context, f *file, w journal.Write) error {
	if fs.journal != nil {
		f.jmu.RLock()
		defer f.jmu.RUnlock()
		seq, err := fs.journal.Write(w.Ino, w.Off, w.Data)
		if err != nil {
			return err
		}
		f.journaled.Store(seq)
	}
	return f.getWriter().Write(ctx, w.Off, w.Data)
}

// settle commits the rebuffered files and lets go of them.
func (fs *FS) settle(ctx context.Context, files []*file) error {
	var first error
	for _, f := range files {
		if err := f.flush(ctx); err != nil && first == nil {
			first = err
		}
		if err := fs.release(ctx, f, false); err != nil && first == nil {
			first = err
		}
	}
	if len(files) > 0 && first == nil {
		fs.log.Info("takeover: replayed acknowledged writes", "files", len(files))
	}
	return first
}
