package data

import (
	"fmt"
	"io"
	"time"

	"shoal/internal/meta"
	"shoal/internal/object"
)

// startUpload hands block bi of s to a background upload; the caller
// counted it in s.pending when it sealed it. The block's pages are
// immutable from here on (findSlice never writes below sealed), so the
// upload goroutine reads them without w.mu. Called with w.mu held.
func (w *Writer) startUpload(s *slice, bi int) {
	b := s.blocks[bi]
	if b.err != nil {
		b.err = nil
		w.failures--
	}
	size := BlockLen(w.s.cfg.BlockSize, s.length, bi)
	gen := w.gen
	w.s.buf.uploading(1)
	if !w.s.spawn(func() { w.upload(s, bi, b, size, gen) }) {
		w.s.buf.uploading(-1)
		b.err = fmt.Errorf("put block %d of inode %d: %w", bi, w.ino, errStoreClosed)
		w.failures++
		return
	}
	b.uploading = true
	w.uploading++
}

// upload stores one block and records the outcome. If that makes the
// head of the queue ready, this goroutine commits it (claimCommit).
func (w *Writer) upload(s *slice, bi int, b *block, size int, gen uint64) {
	id, err := w.sliceID(s)
	if err == nil {
		err = w.s.put(BlockKey(id, bi, size), func() io.Reader { return newPageReader(b.pages, w.s.pageSize, size) }, size, w.readSoon)
	}
	if w.uploaded(s, bi, b, gen, err) {
		w.commitLoop()
	}
}

// uploaded records the outcome of block bi's upload and reports whether
// the caller is to run commitLoop (claimCommit).
func (w *Writer) uploaded(s *slice, bi int, b *block, gen uint64, err error) (commit bool) {
	// Count the upload finished only after its pages are back, or a
	// waiting writer could see a full buffer with nothing draining and
	// cut its slices needlessly.
	defer w.s.buf.uploading(-1)
	w.mu.Lock()
	defer w.mu.Unlock()
	b.uploading = false
	w.uploading--
	defer w.notify()
	switch {
	case err != nil && !w.closed && gen != w.gen:
		// A retry was requested while this attempt ran: it is owed a
		// fresh one, not a report of the old outcome.
		w.startUpload(s, bi)
	case err != nil && !w.closed:
		b.err = err
		w.failures++
		w.s.log.Error("data: block upload failed", "ino", w.ino, "err", err)
	case err != nil: // closed: Close abandoned the data
		w.s.putPages(b.pages)
		b.pages = nil
	default:
		w.stored(s, b)
		return w.claimCommit()
	}
	return false
}

// stored records a block as stored and frees its pages. The caller
// claims the commit it may have made possible (claimCommit). Called with
// w.mu held.
func (w *Writer) stored(s *slice, b *block) {
	w.s.putPages(b.pages)
	b.pages = nil
	b.done = true
	if s.stored.IsZero() {
		s.stored = time.Now()
	}
	s.pending--
}

// sliceID returns s's id, asking newID the first time.
func (w *Writer) sliceID(s *slice) (meta.SliceID, error) {
	s.idMu.Lock()
	defer s.idMu.Unlock()
	if s.id != 0 {
		return s.id, nil
	}
	id, err := w.newID(w.s.ctx)
	if err != nil {
		return 0, fmt.Errorf("data: new slice id for inode %d: %w", w.ino, err)
	}
	if id == 0 {
		return 0, fmt.Errorf("data: new slice id for inode %d: got 0", w.ino)
	}
	s.id = id
	return id, nil
}

// put stores a block of size bytes read from newReader(), once: the
// volume's object store retries transient failures itself (volume wires
// object.WithRetry under every store), and a block that still fails is
// kept and uploaded again by a later Flush (retryFailed). The error names
// the key. readSoon marks objects likely to be read back soon
// (object.WithReadSoon).
//
// Block keys are fresh (object.WithFreshKey): slice ids are never reused
// and the engine names a block only after its Put, so a file store writes
// it in place, without a temporary file and rename.
func (s *Store) put(key string, newReader func() io.Reader, size int, readSoon bool) error {
	if err := s.uploadSlot(); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return s.putInSlot(key, newReader, size, readSoon, nil)
}

// uploadSlot waits for one of the Store's upload slots.
func (s *Store) uploadSlot() error {
	select {
	case s.uploads <- struct{}{}:
		return nil
	case <-s.ctx.Done():
		return s.ctx.Err()
	}
}

// putInSlot is put for a caller holding an upload slot (uploadSlot),
// which it gives back. With a batch, the object is durable only once the
// batch's Sync returns nil (object.WithSyncBatch).
func (s *Store) putInSlot(key string, newReader func() io.Reader, size int, readSoon bool, batch *object.SyncBatch) error {
	ctx := object.WithFreshKey(s.ctx)
	if readSoon {
		ctx = object.WithReadSoon(ctx)
	}
	if batch != nil {
		ctx = object.WithSyncBatch(ctx, batch)
	}
	err := s.objects.Put(ctx, key, newReader(), int64(size))
	<-s.uploads
	if err != nil {
		s.counters.putFailures.Add(1)
		return fmt.Errorf("put %s: %w", key, err)
	}
	s.counters.blocksPut.Add(1)
	s.counters.bytesPut.Add(int64(size))
	return nil
}

// retryFailed restarts the upload of every block that failed for good.
// Called with w.mu held.
func (w *Writer) retryFailed() {
	w.gen++
	if w.failures == 0 {
		return
	}
	for _, s := range w.queue {
		if s.pack != nil {
			if s.pack.err != nil && !s.pack.uploading {
				w.startPackUpload(s.pack)
			}
			continue
		}
		for bi, b := range s.blocks {
			if b.err != nil {
				w.startUpload(s, bi)
			}
		}
	}
}
