package data

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"shoal/internal/meta"
)

// ready reports whether slice s can commit once the slices before it
// have.
func (s *slice) ready() bool { return s.frozen && s.pending == 0 }

// headReady reports whether the oldest uncommitted slice can commit now.
// Called with w.mu held.
func (w *Writer) headReady() bool {
	if len(w.queue) == 0 || w.commitErr != nil || w.closed {
		return false
	}
	return w.queue[0].ready()
}

// kickCommit starts the commit goroutine if the head slice is ready and
// none runs, after sealing the open pack if the head waits for it.
// Commits never run on the caller's goroutine: Write and Flush may be
// called with vfs locks held that CommitFunc needs too.
// Called with w.mu held.
func (w *Writer) kickCommit() {
	if w.claimCommit() && !w.s.spawn(w.commitLoop) {
		w.committing = false
	}
}

// claimCommit is kickCommit for a goroutine of the Writer's own: if a
// commit can start, it marks one running and reports true, and the
// caller runs commitLoop once it has released w.mu.
//
// An upload that stores the block the head slice waited for commits it
// on its own goroutine this way rather than start one: on an fsync's
// path (Flush, the upload, the commit, Flush again) that is one
// goroutine hand-off fewer, a wake-up that cost 20-100 µs on the loaded
// 2-core test machine. The upload goroutine holds no lock and no upload
// slot by then, so it is as free to call CommitFunc as a goroutine
// started for it. Called with w.mu held.
func (w *Writer) claimCommit() bool {
	w.sealHeadPack()
	if w.committing || !w.headReady() {
		return false
	}
	w.committing = true
	return true
}

// commitLoop commits ready slices in order, up to maxCommitBatch per
// CommitFunc call, until the head is not ready or a commit fails. The
// failure is kept for Flush, which retries.
func (w *Writer) commitLoop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.headReady() {
		batch, ws, refs := w.nextBatch(nil)
		var old []meta.Slice
		for i, s := range batch {
			if time.Since(s.stored) > w.s.verifyAfter {
				old = append(old, ws[i].S)
			}
		}
		w.mu.Unlock()
		var err error
		for _, ms := range old {
			if err = w.verify(ms); err != nil {
				break
			}
		}
		if err == nil {
			err = w.commit(w.s.ctx, ws)
		}
		w.mu.Lock()
		if err != nil {
			w.commitFailed(batch, ws, err)
			break
		}
		w.dropCommitted(batch, refs)
	}
	w.committing = false
	w.notify()
}

// commitFailed keeps a failed commit's error for Flush. Called with w.mu
// held.
func (w *Writer) commitFailed(batch []*slice, ws []meta.SliceWrite, err error) {
	w.commitErr = fmt.Errorf("data: commit inode %d chunk %d %v (+%d more): %w", w.ino, batch[0].chunk, ws[0].S, len(ws)-1, err)
	w.s.log.Error("data: slice commit failed", "ino", w.ino, "chunk", batch[0].chunk, "slices", len(ws), "err", err)
}

// dropCommitted drops the committed batch from the queue and counts the pack
// references its records took. Called with w.mu held.
func (w *Writer) dropCommitted(batch []*slice, refs map[*pack]int) {
	for p, n := range refs {
		p.refs += n
	}
	for _, s := range batch {
		w.pop(s)
	}
	w.notify()
	w.sealHeadPack()
}

// nextBatch returns the ready slices at the head of the queue, their
// records, and how many records each pack among them gets. A pack's first
// committed record holds its implicit reference; later ones are Shared.
// With early set, members of that pack whose Put is running count as
// ready too, and the batch stops at a slice stored long enough ago to
// need verify (gated.go). Called with w.mu held.
func (w *Writer) nextBatch(early *pack) ([]*slice, []meta.SliceWrite, map[*pack]int) {
	var batch []*slice
	var ws []meta.SliceWrite
	refs := map[*pack]int{}
	for _, s := range w.queue {
		if len(batch) == maxCommitBatch || !(s.ready() || s.waitsOnlyFor(early)) {
			break
		}
		if early != nil && s.pack != early && time.Since(s.stored) > w.s.verifyAfter {
			break
		}
		size, off := s.object()
		rec := meta.SliceWrite{Index: s.chunk, S: meta.Slice{ID: s.id, Size: size, Off: off, Len: s.length, Pos: s.pos}}
		if p := s.pack; p != nil {
			rec.Shared = p.refs+refs[p] > 0
			refs[p]++
		}
		batch = append(batch, s)
		ws = append(ws, rec)
	}
	return batch, ws, refs
}

// verify checks, for a slice whose blocks were stored long ago, that they
// are all still there before it is committed. Garbage collection deletes
// unreferenced objects older than its grace period (an hour by default);
// a commit delayed past it, by an engine outage, must not reference
// objects gc may have taken. A missing block is data lost: the commit
// fails and Flush and Close report it.
func (w *Writer) verify(ms meta.Slice) error {
	bs := w.s.cfg.BlockSize
	for i := 0; i < BlockCount(bs, ms.Size); i++ {
		key := BlockKey(ms.ID, i, BlockLen(bs, ms.Size, i))
		if _, err := w.s.objects.Head(w.s.ctx, key); err != nil {
			return fmt.Errorf("block %s stored at least %v ago: %w", key, w.s.verifyAfter, err)
		}
	}
	return nil
}

// pop drops the committed head slice s. Called with w.mu held.
func (w *Writer) pop(s *slice) {
	w.queue[0] = nil
	w.queue = w.queue[1:]
	list := w.chunks[s.chunk]
	list[0] = nil
	if len(list) == 1 {
		delete(w.chunks, s.chunk)
	} else {
		w.chunks[s.chunk] = list[1:]
	}
	w.committed = s.seq
	w.stale = true
	s.blocks = nil
}

// Flush returns once every byte written before the call is stored and
// committed, in order. If an upload or commit fails for good it returns
// the error (naming the object key for uploads) and keeps the data, so a
// later Flush retries. It may be called concurrently with Write.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errClosed
	}
	target := w.seq
	// Failed uploads restart first, so that the uploads this Flush starts
	// carry its generation: otherwise each would owe itself a second
	// attempt on failure, a retry layer over the store's own.
	w.retryFailed()
	for _, s := range w.queue {
		w.freeze(s)
	}
	w.commitErr = nil
	w.kickCommit()
	for w.committed < target {
		if w.commitErr != nil {
			return w.commitErr
		}
		if err := w.firstFailure(target); err != nil {
			return err
		}
		changed := w.changed
		w.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
		}
		w.mu.Lock()
		if err := ctx.Err(); err != nil {
			return err
		}
		if w.closed { // closed by another goroutine meanwhile
			return errClosed
		}
	}
	return nil
}

// Close flushes w and releases it. On a Flush error the unstored data is
// dropped and the error returned: the caller reports it (close(2) → EIO),
// so nothing is lost silently.
func (w *Writer) Close(ctx context.Context) error {
	err := w.Flush(ctx)
	w.discard()
	return err
}

// armTimer schedules the idle check. Called with w.mu held.
func (w *Writer) armTimer() {
	if w.armed || w.closed {
		return
	}
	w.armed = true
	if w.timer == nil {
		w.timer = time.AfterFunc(w.s.cfg.IdleCommit, w.onIdle)
	} else {
		w.timer.Reset(w.s.cfg.IdleCommit)
	}
}

func (w *Writer) stopTimer() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
	w.armed = false
}

// onIdle commits slices idle for IdleCommit (or open for ten times that)
// and retries failed uploads and commits in the background, so a store or
// engine outage heals without a Flush.
func (w *Writer) onIdle() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = false
	if w.closed || w.s.ctx.Err() != nil {
		return
	}
	idle := w.s.cfg.IdleCommit
	now := time.Now()
	open := false
	for _, s := range w.queue {
		if s.frozen {
			continue
		}
		if now.Sub(s.written) >= idle || now.Sub(s.created) >= maxSliceAgeFactor*idle {
			w.freeze(s)
		} else {
			open = true
		}
	}
	w.retryFailed()
	var errno syscall.Errno
	if !errors.As(w.commitErr, &errno) {
		// An engine outage heals by itself; an answer such as ENOENT (the
		// file was removed) or EDQUOT does not, so only Flush retries it.
		w.commitErr = nil
	}
	w.kickCommit()
	if open || len(w.queue) > 0 {
		w.armTimer()
	}
}
