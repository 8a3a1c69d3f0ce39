package data

import (
	"context"
	"fmt"
	"sync"

	"shoal/internal/meta"
)

// holeKeep is the smallest hole that compaction keeps as a hole. Smaller
// gaps between data are written out as zeros, so the result has few slices;
// larger ones stay unwritten, so compaction never stores megabytes of zeros.
const holeKeep = 1 << 20

// Compact rewrites the visible data of chunk index (slice list slices,
// oldest first) as new slices through the normal upload path and returns
// the replacement list, which reads identically: each run of data becomes
// one slice (more if the write buffer forces a cut), and holes of holeKeep
// or more stay holes. The caller swaps the lists with the engine's
// CompactChunk; if that fails it should DeleteSlice the returned slices.
// On error, slices already stored are deleted (best effort).
func (s *Store) Compact(ctx context.Context, ino meta.Ino, index uint32, slices []meta.Slice, newID IDFunc) ([]meta.Slice, error) {
	var mu sync.Mutex
	var out []meta.Slice
	w := s.NewWriter(ino, newID, func(_ context.Context, ws []meta.SliceWrite) error {
		mu.Lock()
		for _, r := range ws {
			out = append(out, r.S)
		}
		mu.Unlock()
		return nil
	})
	w.noPack = true // abort deletes what it stored: objects of its own only
	// A chunk is compacted because it is being rewritten, and its new
	// blocks serve the reads that follow.
	w.readSoon = true
	err := s.copyRuns(ctx, w, s.NewReader(ino), index, slices)
	if err == nil {
		err = w.Close(ctx)
	}
	if err != nil {
		out = append(out, w.abort()...)
	}
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		for _, sl := range out {
			_ = s.DeleteSlice(context.WithoutCancel(ctx), sl.ID, sl.Size)
		}
		return nil, fmt.Errorf("data: compact inode %d chunk %d: %w", ino, index, err)
	}
	return out, nil
}

// copyRuns reads each data run of the chunk and writes it to w.
func (s *Store) copyRuns(ctx context.Context, w *Writer, r *Reader, index uint32, slices []meta.Slice) error {
	buf := make([]byte, s.cfg.BlockSize)
	base := uint64(index) * meta.ChunkSize
	for _, run := range dataRuns(slices) {
		for at := run.Pos; at < run.Pos+run.Len; {
			n := min(uint32(len(buf)), run.Pos+run.Len-at)
			if _, err := r.Read(ctx, index, slices, at, buf[:n]); err != nil {
				return err
			}
			if err := w.Write(ctx, base+uint64(at), buf[:n]); err != nil {
				return err
			}
			at += n
		}
	}
	return nil
}

// dataRuns returns the chunk ranges to rewrite: the visible data pieces,
// merged across holes shorter than holeKeep. Only Pos and Len are set.
func dataRuns(slices []meta.Slice) []meta.Slice {
	var runs []meta.Slice
	for _, p := range meta.Resolve(slices, 0, meta.Extent(slices)) {
		if p.ID == 0 {
			continue
		}
		if n := len(runs); n > 0 && p.Pos-(runs[n-1].Pos+runs[n-1].Len) < holeKeep {
			runs[n-1].Len = p.Pos + p.Len - runs[n-1].Pos
			continue
		}
		runs = append(runs, meta.Slice{Pos: p.Pos, Len: p.Len})
	}
	return runs
}

// discard drops w's buffered data without storing it and releases w.
func (w *Writer) discard() {
	w.mu.Lock()
	w.closed = true
	for _, s := range w.queue {
		if s.sealed > 0 {
			w.dropped = append(w.dropped, s)
		}
		for _, b := range s.blocks {
			if !b.uploading && b.pages != nil {
				w.s.putPages(b.pages)
				b.pages = nil
			}
		}
	}
	w.queue, w.chunks, w.open = nil, nil, nil
	w.failures = 0
	w.notify()
	w.mu.Unlock()
	w.stopTimer()
	w.s.unregister(w)
}

// abort drops w's data, waits for its uploads in flight to end, and
// returns the uncommitted slices that may have stored blocks (ID and Size
// set), so their objects can be deleted.
func (w *Writer) abort() []meta.Slice {
	w.discard()
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.uploading > 0 {
		changed := w.changed
		w.mu.Unlock()
		<-changed
		w.mu.Lock()
	}
	var out []meta.Slice
	for _, s := range w.dropped {
		if s.pack != nil {
			continue // never with noPack; a pack may be shared with committed records
		}
		s.idMu.Lock()
		if s.id != 0 {
			out = append(out, meta.Slice{ID: s.id, Size: s.length})
		}
		s.idMu.Unlock()
	}
	return out
}

// DeleteSlice deletes the block objects of slice id of size bytes, in
// parallel. Absent objects are fine, so it is idempotent. Cached copies
// are dropped.
func (s *Store) DeleteSlice(ctx context.Context, id meta.SliceID, size uint32) error {
	bs := s.cfg.BlockSize
	n := BlockCount(bs, size)
	sem := make(chan struct{}, s.cfg.Uploads)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for i := 0; i < n; i++ {
		key := BlockKey(id, i, BlockLen(bs, size, i))
		s.cache.drop(key)
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := s.objects.Delete(ctx, key); err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("data: delete slice %d: %s: %w", id, key, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}
