package data

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// pageSize is the unit write buffers are allocated in. A small write costs
// one page, not a whole block; a sequential writer fills pages without ever
// copying a growing buffer.
const pageSize = 16 << 10

// getPage returns a zeroed-or-reused page of s.pageSize bytes and charges
// it to the write budget. Pages are fully overwritten before they are read
// (a slice has no internal holes), so reuse needs no clearing.
func (s *Store) getPage() []byte {
	s.buf.add(int64(s.pageSize))
	if p, ok := s.pages.Get().(*[]byte); ok {
		return *p
	}
	return make([]byte, s.pageSize)
}

// putPages returns pages to the pool and releases their budget.
func (s *Store) putPages(pages [][]byte) {
	n := 0
	for i, p := range pages {
		if p != nil {
			s.pages.Put(&p)
			pages[i] = nil
			n++
		}
	}
	s.buf.release(int64(n * s.pageSize))
}

// budget counts the bytes of write buffer in use against a soft limit.
// Waiters watch changed, which is closed and replaced on every release.
type budget struct {
	used     atomic.Int64 // charged without mu: every 16 KiB page of a write
	mu       sync.Mutex
	limit    int64
	inflight int // blocks sealed and uploading: waiting frees space
	changed  chan struct{}
}

func (b *budget) init(limit int64) {
	b.limit = limit
	b.changed = make(chan struct{})
}

func (b *budget) add(n int64) { b.used.Add(n) }

func (b *budget) release(n int64) {
	b.used.Add(-n)
	b.mu.Lock()
	b.notifyLocked()
	b.mu.Unlock()
}

func (b *budget) notifyLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// uploading adjusts the count of blocks in flight.
func (b *budget) uploading(delta int) {
	b.mu.Lock()
	b.inflight += delta
	b.notifyLocked()
	b.mu.Unlock()
}

// state reports whether the budget is exhausted, whether uploads in flight
// will free space, and a channel closed at the next change.
func (b *budget) state() (full bool, draining bool, changed <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// used is read after changed is taken: a release after this point
	// closes the channel returned.
	return b.used.Load() >= b.limit, b.inflight > 0, b.changed
}

// Used returns the write buffer bytes currently allocated.
func (s *Store) Used() int64 {
	return s.buf.used.Load()
}

// waitBuffer blocks until the write budget has room. While nothing is
// uploading, waiting alone would never free space, so it freezes open
// slices (first w's, then everyone's) to start their partial blocks
// uploading. If w has an upload that failed for good, it returns that error
// instead of waiting on a store that is down.
func (s *Store) waitBuffer(ctx context.Context, w *Writer) error {
	for round := 0; ; round++ {
		full, draining, changed := s.buf.state()
		if !full {
			return nil
		}
		if err := w.failure(); err != nil {
			return err
		}
		if !draining {
			if round == 0 {
				w.freezeOpen()
			} else {
				s.freezeAllWriters()
			}
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		t.Stop()
	}
}

// pageReader reads a block's bytes from its pages without copying them
// into one buffer first. It implements io.ReaderAt, io.Seeker and
// io.WriterTo so backends can retry or stream without buffering.
type pageReader struct {
	pages    [][]byte
	pageSize int
	size     int64
	off      int64
}

func newPageReader(pages [][]byte, pageSize, size int) *pageReader {
	return &pageReader{pages: pages, pageSize: pageSize, size: int64(size)}
}

// ReadAt implements io.ReaderAt.
func (r *pageReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("data: negative offset")
	}
	n := 0
	for len(p) > 0 && off < r.size {
		page := r.pages[off/int64(r.pageSize)]
		po := int(off % int64(r.pageSize))
		end := min(r.pageSize, po+int(r.size-off))
		c := copy(p, page[po:end])
		n += c
		off += int64(c)
		p = p[c:]
	}
	if len(p) > 0 {
		return n, io.EOF
	}
	return n, nil
}

// Read implements io.Reader.
func (r *pageReader) Read(p []byte) (int, error) {
	if r.off >= r.size {
		return 0, io.EOF
	}
	n, _ := r.ReadAt(p, r.off)
	r.off += int64(n)
	return n, nil
}

// Seek implements io.Seeker.
func (r *pageReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += r.off
	case io.SeekEnd:
		offset += r.size
	default:
		return 0, errors.New("data: bad whence")
	}
	if offset < 0 {
		return 0, errors.New("data: negative seek")
	}
	r.off = offset
	return offset, nil
}

// WriteTo implements io.WriterTo, handing each page to w in turn.
func (r *pageReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for r.off < r.size {
		page := r.pages[r.off/int64(r.pageSize)]
		po := int(r.off % int64(r.pageSize))
		end := min(r.pageSize, po+int(r.size-r.off))
		n, err := w.Write(page[po:end])
		total += int64(n)
		r.off += int64(n)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Len returns the unread bytes (some HTTP clients use it for the length).
func (r *pageReader) Len() int { return int(r.size - r.off) }
