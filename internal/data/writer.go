package data

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"time"

	"shoal/internal/meta"
)

// IDFunc returns a new volume-unique slice id (the engine's NewSliceID).
type IDFunc func(ctx context.Context) (meta.SliceID, error)

// CommitFunc records slices of the file, in order, in one transaction
// (the engine's WriteSlices). The Writer calls it only after every block
// of every slice in ws is stored, strictly in the order the slices were
// written, from one goroutine at a time (not necessarily the caller's).
type CommitFunc func(ctx context.Context, ws []meta.SliceWrite) error

// maxCommitBatch bounds the slices one CommitFunc call records.
const maxCommitBatch = 256

// scanDepth bounds how many of a chunk's newest uncommitted slices a write
// considers extending. Beyond it a write simply starts a new slice, which
// is always correct.
const scanDepth = 8

// maxSliceAge freezes a slice that keeps growing slowly, so a steady
// trickle of appends still reaches the engine now and then.
const maxSliceAgeFactor = 10

// Writer buffers one file's writes as slices and stores and commits them.
// Its methods are safe for concurrent use. See doc.go for the design.
type Writer struct {
	s      *Store
	ino    meta.Ino
	newID  IDFunc
	commit CommitFunc

	mu         sync.Mutex
	changed    chan struct{}       // closed and replaced on progress
	queue      []*slice            // uncommitted slices, oldest first
	chunks     map[uint32][]*slice // the same, per chunk
	seq        uint64              // seq of the newest slice
	committed  uint64              // seq of the newest committed slice
	committing bool                // a commit goroutine runs
	commitErr  error               // last commit failure, until retried
	failures   int                 // blocks whose upload failed for good
	uploading  int                 // upload goroutines running
	dropped    []*slice            // slices discarded with blocks sealed
	gen        uint64              // retry generation, see retryFailed
	extent     uint64              // cached Extent
	stale      bool                // extent needs recomputing
	timer      *time.Timer         // idle commit timer
	armed      bool                // timer pending
	closed     bool                // Close called
	open       *pack               // pack taking small frozen slices, see pack.go
	noPack     bool                // store every slice in objects of its own
	readSoon   bool                // blocks go where reads find them (object.WithReadSoon)
}

// slice is one uncommitted slice: bytes [0, length) of its data sit at
// chunk position pos. Blocks [0, sealed) are handed to upload and are
// immutable; later blocks still take writes.
type slice struct {
	seq     uint64
	chunk   uint32
	pos     uint32
	length  uint32
	blocks  []*block
	sealed  int
	frozen  bool
	pending int // sealed blocks not yet stored
	created time.Time
	written time.Time
	stored  time.Time // when its first block was stored

	// pack, when set, stores s's bytes at off of a shared object (see
	// pack.go); s.id is then the pack's id, set once it is stored.
	pack *pack
	off  uint32

	idMu sync.Mutex
	id   meta.SliceID
}

// object returns the size of the object(s) s's bytes are stored in and
// their offset there: a slice of its own, or its place in a pack (whose
// object's size is set before its upload starts; asked only once stored
// or, by a gated commit, while uploading).
func (s *slice) object() (size, off uint32) {
	if s.pack != nil {
		return uint32(s.pack.obj), s.off
	}
	return s.length, 0
}

// block is one block of a slice's buffered data, in pages.
type block struct {
	pages     [][]byte
	uploading bool
	done      bool
	err       error // upload failed for good; pages kept for a retry
}

// NewWriter returns a Writer for inode ino. newID is called once per slice,
// lazily, when its first block uploads; commit as CommitFunc says.
func (s *Store) NewWriter(ino meta.Ino, newID IDFunc, commit CommitFunc) *Writer {
	w := &Writer{
		s:       s,
		ino:     ino,
		newID:   newID,
		commit:  commit,
		changed: make(chan struct{}),
		chunks:  map[uint32][]*slice{},
	}
	s.register(w)
	return w
}

// Write copies p into the buffer at file offset off. It may span chunks.
// It waits while the Store's write buffer is full, and returns an error
// (wrapping the object key) if this writer's uploads have failed for good
// while it waits; bytes accepted before an error stay buffered.
func (w *Writer) Write(ctx context.Context, off uint64, p []byte) error {
	if off+uint64(len(p)) < off || (off+uint64(len(p)))/meta.ChunkSize > 1<<32-1 {
		return syscall.EFBIG
	}
	for len(p) > 0 {
		if err := w.s.waitBuffer(ctx, w); err != nil {
			return err
		}
		index := uint32(off / meta.ChunkSize)
		pos := uint32(off % meta.ChunkSize)
		n := min(len(p), meta.ChunkSize-int(pos), w.s.cfg.BlockSize)
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			return errClosed
		}
		w.writeChunk(index, pos, p[:n])
		w.mu.Unlock()
		off += uint64(n)
		p = p[n:]
	}
	return nil
}

// writeChunk places p at pos of chunk index, extending a slice when that
// keeps the commit order correct, else starting one.
func (w *Writer) writeChunk(index, pos uint32, p []byte) {
	s := w.findSlice(index, pos, uint32(len(p)))
	if s == nil {
		s = w.newSlice(index, pos)
	}
	w.copyIn(s, pos-s.pos, p)
	s.written = time.Now()
	end := uint64(index)*meta.ChunkSize + uint64(s.pos+s.length)
	w.extent = max(w.extent, end)
	w.sealFull(s)
	if s.pos+s.length == meta.ChunkSize {
		w.freeze(s)
	}
	w.armTimer()
}

// findSlice returns the open slice that may take a write of n bytes at pos,
// or nil. A slice may be extended only if the write starts inside its
// unsealed tail or right at its end, and no newer slice of the chunk
// overlaps the write: slices commit in creation order, so a newer
// overlapping slice would wrongly shadow the extension.
func (w *Writer) findSlice(index, pos, n uint32) *slice {
	list := w.chunks[index]
	for i := len(list) - 1; i >= 0 && i >= len(list)-scanDepth; i-- {
		s := list[i]
		if !s.frozen {
			flushed := uint32(s.sealed * w.s.cfg.BlockSize)
			if pos >= s.pos+flushed && pos <= s.pos+s.length {
				return s
			}
		}
		if pos < s.pos+s.length && s.pos < pos+n {
			return nil
		}
	}
	return nil
}

func (w *Writer) newSlice(index, pos uint32) *slice {
	w.seq++
	now := time.Now()
	s := &slice{seq: w.seq, chunk: index, pos: pos, created: now, written: now}
	w.queue = append(w.queue, s)
	w.chunks[index] = append(w.chunks[index], s)
	return s
}

// copyIn copies p to offset off of s's data, allocating pages as needed.
func (w *Writer) copyIn(s *slice, off uint32, p []byte) {
	bs, ps := w.s.cfg.BlockSize, w.s.pageSize
	at := int(off)
	for len(p) > 0 {
		bi, within := at/bs, at%bs
		for len(s.blocks) <= bi {
			s.blocks = append(s.blocks, &block{})
		}
		b := s.blocks[bi]
		pi, po := within/ps, within%ps
		for len(b.pages) <= pi {
			b.pages = append(b.pages, nil)
		}
		if b.pages[pi] == nil {
			b.pages[pi] = w.s.getPage()
		}
		pageEnd := min(ps, bs-pi*ps)
		n := copy(b.pages[pi][po:pageEnd], p)
		at += n
		p = p[n:]
	}
	s.length = max(s.length, uint32(at))
}

// sealFull hands every complete, unsealed block of s to upload.
func (w *Writer) sealFull(s *slice) {
	bs := w.s.cfg.BlockSize
	for s.sealed < len(s.blocks) && (s.sealed+1)*bs <= int(s.length) {
		w.seal(s)
	}
}

// freeze ends s: it takes no more writes, its last partial block uploads,
// and it commits once all its blocks are stored.
func (w *Writer) freeze(s *slice) {
	if s.frozen {
		return
	}
	s.frozen = true
	if w.packable(s) {
		w.packSlice(s)
		w.kickCommit()
		return
	}
	w.sealFull(s)
	if s.sealed < len(s.blocks) {
		w.seal(s)
	}
	w.kickCommit()
}

// seal makes the next block of s immutable and starts its upload.
func (w *Writer) seal(s *slice) {
	s.pending++
	w.startUpload(s, s.sealed)
	s.sealed++
}

// freezeOpen freezes every open slice of w.
func (w *Writer) freezeOpen() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.queue {
		w.freeze(s)
	}
}

// Dirty reports whether w holds bytes not yet committed.
func (w *Writer) Dirty() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue) > 0
}

// Extent returns the file offset just past the furthest uncommitted byte,
// or 0 if there is none.
func (w *Writer) Extent() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stale {
		w.extent = 0
		for _, s := range w.queue {
			w.extent = max(w.extent, uint64(s.chunk)*meta.ChunkSize+uint64(s.pos+s.length))
		}
		w.stale = false
	}
	return w.extent
}

// notify wakes everyone waiting on w's progress. Called with w.mu held.
func (w *Writer) notify() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// failure returns an upload error of w that retries did not cure, if any.
func (w *Writer) failure() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failures == 0 {
		return nil
	}
	return w.firstFailure(^uint64(0))
}

// firstFailure returns the error of the oldest failed block among slices
// up to seq, or nil. Called with w.mu held.
func (w *Writer) firstFailure(seq uint64) error {
	if w.failures == 0 {
		return nil
	}
	for _, s := range w.queue {
		if s.seq > seq {
			break
		}
		if s.pack != nil && s.pack.err != nil {
			return fmt.Errorf("data: write inode %d: %w", w.ino, s.pack.err)
		}
		for _, b := range s.blocks {
			if b.err != nil {
				return fmt.Errorf("data: write inode %d: %w", w.ino, b.err)
			}
		}
	}
	return nil
}
