package data

import (
	"fmt"
	"io"
	"sync"

	"shoal/internal/meta"
	"shoal/internal/object"
)

// Commits that run beside their pack's Put.
//
// On an fsync(2) of a small change the pack's Put (a write and an
// fdatasync into a name made durable ahead, named.go) and the slice
// commit used to run one after the other. The commit's transaction does
// most of its work before it needs the block: its reads, its writes, in
// SQLite under the writer's lock; only its COMMIT must come after the
// block is durable (invariant 1). So when the Put of a pack with a
// prepared name is all that the head of the queue waits for, the upload
// goroutine claims the commit, writes the pack's bytes and starts their
// write-out (its fdatasync left to an object.SyncBatch), starts the
// batch's Sync on a goroutine of its own, then runs CommitFunc itself
// with a commit gate (meta.WithCommitGate) that waits for that Sync: the
// engine awaits it last, before it commits, and a failed Put or sync
// fails the transaction, which commits nothing. Only Stores whose
// CommitFuncs await the gate do this (Config.GatedCommit, set by the
// volume for kvmeta engines): elsewhere the commit would no longer follow
// the block.
//
// Only prepared names take this path: their Put is a local write and
// fdatasync, so a SQLite writer's lock held across the wait is held for
// about one device flush, not for a slow object store's round trips. The
// Put takes its upload slot before the commit starts, for the same
// reason.
//
// Measured on the 2-core test machine (load 6-7), corebench fsyncs of
// 4 KiB append + fsync, three runs of 500 interleaved with the build
// before: the median 0.88-0.95 of before on SQLite, 0.87-0.98 on Redis,
// 0.86-0.89 on PostgreSQL. Inside a SQLite fsync (before): the pack's
// write and fdatasync 260-340 µs, the commit 95-140 µs, the WAL's
// fdatasync 190-230 µs, FUSE and hand-offs the rest; after, the commit's
// work until its gate (about 85 µs) runs while the bytes go out, and the
// fdatasync that follows waits mostly for the device's cache flush.

// waitsOnlyFor reports whether s waits for nothing but p's Put: frozen,
// a member of p (whose one block is p's), and nothing else pending.
func (s *slice) waitsOnlyFor(p *pack) bool {
	return p != nil && s.pack == p && s.frozen && s.pending == 1
}

// gatedPut stores p, a pack with a prepared name, with its commit beside
// the Put if the head of the queue waits only for p and no commit runs.
// It reports false, having done nothing, if so it cannot; the caller then
// puts p as usual.
func (w *Writer) gatedPut(p *pack, gen uint64) bool {
	if !w.s.cfg.GatedCommit || w.s.uploadSlot() != nil {
		return false
	}
	w.mu.Lock()
	if w.committing || w.commitErr != nil || w.closed || len(w.queue) == 0 || !w.queue[0].waitsOnlyFor(p) {
		w.mu.Unlock()
		<-w.s.uploads
		return false
	}
	w.committing = true
	for _, m := range p.members {
		m.idMu.Lock()
		m.id = p.id
		m.idMu.Unlock()
	}
	batch, ws, refs := w.nextBatch(p)
	w.mu.Unlock()

	// The Put writes the bytes and starts their write-out on this
	// goroutine, leaving its fdatasync to the batch, whose Sync then runs
	// beside the commit's work; the gate waits for it. (A whole Put on a
	// goroutine of its own gained nothing on the loaded 2-core test
	// machine: waking a second thread cost what the overlap saved. The
	// fdatasync alone, started at once rather than when the gate is
	// reached, left a PostgreSQL commit 23–46 µs of waiting at its gate
	// instead of 85–110 µs; corebench fsync, six rounds of 300
	// interleaved with the build before, fresh volumes: the median 0.92
	// of before on PostgreSQL, 0.99 on SQLite.)
	var syncs object.SyncBatch
	key := BlockKey(p.id, 0, p.obj)
	putErr := w.s.putInSlot(key, func() io.Reader { return w.packReader(p) }, p.obj, false, &syncs)
	// The fdatasync starts now, beside the commit's work, and the gate
	// waits for its outcome.
	synced := make(chan error, 1)
	if putErr == nil {
		go func() { synced <- syncs.Sync() }()
	}
	var once sync.Once
	gate := func() error {
		once.Do(func() {
			if putErr != nil {
				return
			}
			if err := <-synced; err != nil {
				w.s.counters.putFailures.Add(1)
				putErr = fmt.Errorf("put %s: %w", key, err)
			}
		})
		return putErr
	}
	err := w.commit(meta.WithCommitGate(w.s.ctx, gate), ws)
	gate() // the commit may have failed before it awaited the gate
	w.mu.Lock()
	more := false
	switch {
	case !w.packDone(p, gen, putErr):
		// The gate failed the commit; the upload's failure is what
		// Flush reports, and retries.
		w.committing = false
		if err == nil {
			w.s.log.Error("data: slices committed though their pack's Put failed (CommitFunc ignores the gate)", "ino", w.ino, "err", putErr)
		}
	case err != nil:
		w.committing = false
		w.commitFailed(batch, ws, err)
	default:
		w.dropCommitted(batch, refs)
		more = true // still committing: commitLoop goes on
	}
	w.notify()
	w.mu.Unlock()
	w.s.buf.uploading(-1)
	if more {
		w.commitLoop()
	}
	return true
}
