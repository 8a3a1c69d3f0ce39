package data

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"syscall"

	"shoal/internal/meta"
)

// seqSlack is how far a read may start from where the previous one ended
// and still count as sequential. The kernel issues read-ahead requests in
// parallel, so they arrive slightly out of order.
const seqSlack = 1 << 20

// seqRun is how many reads in a row must continue each other before a
// reader counts as sequential (whole blocks, read-ahead). With one, a
// random reader of a large file lands within seqSlack of its last read
// now and then (parallel random 4 KiB reads over a GiB: one read in a few
// hundred) and pulls megabytes it will not read.
const seqRun = 2

// smallBlock is the size up to which a block is always fetched whole: one
// request either way, and the rest is likely read next.
const smallBlock = 128 << 10

// Reader reads one file's data. It detects sequential access from the
// offsets it is asked for and then prefetches ahead. Safe for concurrent
// use; it holds no resources, so it needs no Close.
type Reader struct {
	s   *Store
	ino meta.Ino

	mu      sync.Mutex
	next    uint64 // file offset where the last sequential run ended
	run     int    // consecutive sequential reads
	runFrom uint64 // file offset where the sequential run started
	aheadTo uint64 // file offset up to which blocks were prefetched
	paint   paintings
	list    ListFunc // optional: lets read-ahead cross chunk boundaries
}

// NewReader returns a Reader for inode ino.
func (s *Store) NewReader(ino meta.Ino) *Reader {
	return &Reader{s: s, ino: ino}
}

// SetList gives the Reader a way to list chunks itself, so read-ahead can
// run into the next chunk before the caller reads there. list is called
// from background goroutines with a context that ends at Store.Close; it
// must be safe for concurrent use. Call it before the first Read.
func (r *Reader) SetList(list ListFunc) {
	r.mu.Lock()
	r.list = list
	r.mu.Unlock()
}

// Read fills buf with the visible bytes of chunk index at chunk position
// pos, given the chunk's slice list (oldest first), which the caller must
// not change afterwards (long lists are recognised by identity: see
// sharedPaints). Holes read as zeros.
// It returns len(buf), or 0 and an error wrapping object.ErrNotExist or
// ErrCorrupt (naming the inode, file offset and key) when a block is
// missing or has the wrong size. pos+len(buf) must not pass the chunk end.
func (r *Reader) Read(ctx context.Context, index uint32, slices []meta.Slice, pos uint32, buf []byte) (int, error) {
	if uint64(pos)+uint64(len(buf)) > meta.ChunkSize {
		return 0, fmt.Errorf("data: read inode %d chunk %d pos %d len %d: past chunk end: %w",
			r.ino, index, pos, len(buf), syscall.EINVAL)
	}
	if len(buf) == 0 {
		return 0, nil
	}
	seq := r.observe(index, pos, len(buf))
	var pieces, painted []meta.Slice
	if seq {
		// A sequential reader reads the chunk piecewise: paint it once.
		r.mu.Lock()
		painted = r.paint.lookup(index, slices)
		r.mu.Unlock()
		// Before reading: the blocks this read needs load in parallel
		// with the ones after them.
		r.prefetch(index, painted, pos)
		pieces = window(painted, pos, uint32(len(buf)))
	} else {
		// A random read resolves only its window unless the chunk is
		// painted already: one scan of the list, where painting a chunk
		// of thousands of small writes would cost a hundred times more.
		r.mu.Lock()
		painted, ok := r.paint.find(index, slices)
		r.mu.Unlock()
		if !ok {
			painted = r.s.paints.lookup(r.ino, index, slices)
		}
		if painted != nil {
			pieces = window(painted, pos, uint32(len(buf)))
		} else {
			pieces = meta.Resolve(slices, pos, uint32(len(buf)))
		}
	}
	at := 0
	for _, p := range pieces {
		dst := buf[at : at+int(p.Len)]
		at += int(p.Len)
		if p.ID == 0 {
			clear(dst)
			continue
		}
		whole := seq && coversBlock(containing(painted, p.Pos), int(p.Off), r.s.cfg.BlockSize)
		if err := r.readPiece(ctx, index, p, dst, whole); err != nil {
			return 0, err
		}
	}
	return len(buf), nil
}

// observe classifies a read as sequential or random and updates the
// detector: sequential from the second read in a row that continues the
// one before (the first read at offset 0 counts as continuing).
func (r *Reader) observe(index, pos uint32, n int) bool {
	off := uint64(index)*meta.ChunkSize + uint64(pos)
	end := off + uint64(n)
	r.mu.Lock()
	defer r.mu.Unlock()
	if off+seqSlack >= r.next && off <= r.next+seqSlack {
		r.run++
		r.next = max(r.next, end)
	} else {
		r.run = 0
		r.next = end
		r.aheadTo = 0
		r.runFrom = off
	}
	return r.run >= seqRun
}

// containing returns the piece of a whole-chunk painting that holds chunk
// position pos.
func containing(painted []meta.Slice, pos uint32) meta.Slice {
	i := sort.Search(len(painted), func(i int) bool { return painted[i].Pos+painted[i].Len > pos })
	if i == len(painted) {
		return meta.Slice{}
	}
	return painted[i]
}

// coversBlock reports whether visible piece v (whole, not cut to a read)
// covers at least a quarter of the block holding its byte off. A
// sequential reader fetches such blocks whole for the reads after this
// one; a piece covering little of its block (a small write packed with
// others) is read by range: the rest of the block is other data.
func coversBlock(v meta.Slice, off, bs int) bool {
	if v.ID == 0 {
		return false
	}
	bi := off / bs
	size := BlockLen(bs, v.Size, bi)
	lo, hi := max(int(v.Off), bi*bs), min(int(v.Off+v.Len), bi*bs+size)
	return size > 0 && (hi-lo)*4 >= size
}

// readPiece copies the visible piece p (one slice's bytes) into dst, block
// by block, fetching whole blocks into the cache when whole is set.
func (r *Reader) readPiece(ctx context.Context, index uint32, p meta.Slice, dst []byte, whole bool) error {
	bs := r.s.cfg.BlockSize
	off := int(p.Off)
	for len(dst) > 0 {
		bi, bo := off/bs, off%bs
		size := BlockLen(bs, p.Size, bi)
		if size <= bo {
			return r.fail(index, p, off, BlockKey(p.ID, bi, max(size, 0)),
				fmt.Errorf("slice %v: offset beyond its size: %w", p, ErrCorrupt))
		}
		n := min(len(dst), size-bo)
		key := BlockKey(p.ID, bi, size)
		if err := r.s.readBlock(ctx, key, size, bo, dst[:n], whole); err != nil {
			return r.fail(index, p, off, key, err)
		}
		dst = dst[n:]
		off += n
	}
	return nil
}

// fail wraps and logs a read error with the inode, file offset and key.
func (r *Reader) fail(index uint32, p meta.Slice, sliceOff int, key string, err error) error {
	fileOff := uint64(index)*meta.ChunkSize + uint64(p.Pos) + uint64(sliceOff-int(p.Off))
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	r.s.log.Error("data: read failed", "ino", r.ino, "offset", fileOff, "key", key, "err", err)
	return fmt.Errorf("data: read inode %d offset %d: object %s: %w", r.ino, fileOff, key, err)
}

// readBlock copies bytes [bo, bo+len(dst)) of a block into dst: from the
// cache, by fetching the whole block into the cache (sequential readers,
// small blocks, large reads), or by a ranged Get straight into dst.
//
// A read served by a cached block is a cache hit; a cache miss is counted
// where a fetch is sent to the store (getBlock, getRange), so a read that
// joins a fetch already in flight — its own read-ahead's — is neither, and
// every block read from the store, by a read or by read-ahead, is one miss.
func (s *Store) readBlock(ctx context.Context, key string, size, bo int, dst []byte, whole bool) error {
	if data, ok := s.cache.get(key); ok {
		s.counters.cacheHits.Add(1)
		copy(dst, data[bo:])
		return nil
	}
	// Fetch whole blocks only where the cache keeps them for the next
	// reads; without a cache a sequential reader would fetch each block
	// once per read.
	if (whole || size <= smallBlock || len(dst)*4 >= size) && int64(size) <= s.cache.limit {
		data, err := s.cache.load(ctx, key, func() ([]byte, error) { return s.getBlock(key, size) }, s.spawn, s.run)
		if err != nil {
			return err
		}
		copy(dst, data[bo:])
		return nil
	}
	return s.getRange(ctx, key, bo, dst)
}

// spawn runs f in a goroutine the Store waits for on Close. After Close
// it runs nothing and returns false.
func (s *Store) spawn(f func()) bool {
	if !s.track() {
		return false
	}
	go func() {
		defer s.wg.Done()
		f()
	}()
	return true
}

// run is spawn in the caller's goroutine: it returns once f has run.
func (s *Store) run(f func()) bool {
	if !s.track() {
		return false
	}
	defer s.wg.Done()
	f()
	return true
}

// track counts a piece of work Close waits for (wg.Done when it ends),
// unless the Store is closed.
func (s *Store) track() bool {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

// acquireFetch takes a fetch slot.
func (s *Store) acquireFetch(ctx context.Context) error {
	select {
	case s.fetches <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// getBlock fetches a whole block and checks its size: short or oversized
// objects are ErrCorrupt.
func (s *Store) getBlock(key string, size int) ([]byte, error) {
	if err := s.acquireFetch(s.ctx); err != nil {
		return nil, err
	}
	defer func() { <-s.fetches }()
	s.counters.cacheMisses.Add(1)
	rc, err := s.objects.Get(s.ctx, key, 0, int64(size)+1)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data := make([]byte, size)
	if _, err := io.ReadFull(rc, data); err != nil {
		return nil, sizeErr(err, size)
	}
	var extra [1]byte
	if n, _ := rc.Read(extra[:]); n > 0 {
		return nil, fmt.Errorf("object longer than %d bytes: %w", size, ErrCorrupt)
	}
	s.counters.blocksFetched.Add(1)
	s.counters.bytesFetched.Add(int64(size))
	return data, nil
}

// getRange reads bytes [off, off+len(dst)) of a block straight into dst.
func (s *Store) getRange(ctx context.Context, key string, off int, dst []byte) error {
	if err := s.acquireFetch(ctx); err != nil {
		return err
	}
	defer func() { <-s.fetches }()
	s.counters.cacheMisses.Add(1)
	rc, err := s.objects.Get(ctx, key, int64(off), int64(len(dst)))
	if err != nil {
		return err
	}
	defer rc.Close()
	if _, err := io.ReadFull(rc, dst); err != nil {
		return sizeErr(err, off+len(dst))
	}
	s.counters.rangesFetched.Add(1)
	s.counters.bytesFetched.Add(int64(len(dst)))
	return nil
}

// sizeErr turns a short read into ErrCorrupt.
func sizeErr(err error, want int) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("object shorter than %d bytes: %w", want, ErrCorrupt)
	}
	return err
}

// prefetch starts background fetches of the blocks in the read-ahead
// window from chunk position pos on. Within this chunk it uses painted; a
// window reaching into the next chunk asks the Reader's ListFunc (if it
// has one) for that chunk's list in the background, so a stream does not
// stall on a cold block at every chunk boundary. It tops the window up
// only when half of it has been consumed, so most reads cost nothing.
func (r *Reader) prefetch(index uint32, painted []meta.Slice, pos uint32) {
	chunkStart := uint64(index) * meta.ChunkSize
	chunkEnd := chunkStart + meta.ChunkSize
	from, to, list := r.advance(chunkStart+uint64(pos), chunkEnd)
	if from < min(to, chunkEnd) {
		r.s.prefetchRange(painted, uint32(from-chunkStart), uint32(min(to, chunkEnd)-from))
	}
	if to > chunkEnd && list != nil && index < 1<<32-1 {
		start := max(from, chunkEnd) - chunkEnd
		r.prefetchNext(list, index+1, uint32(start), uint32(min(to-chunkEnd, meta.ChunkSize)-start))
	}
}

// advance computes the file range [from, to) to prefetch for a read at
// file offset off, and records it as requested. The window ramps up with
// the run: four times what was read so far, at least two blocks, so a
// reader of a file's first page does not pull 64 MiB, and a long stream
// reaches the full window soon. Never more than half the cache: blocks
// would evict each other. Without a ListFunc the window stops at chunkEnd.
func (r *Reader) advance(off, chunkEnd uint64) (from, to uint64, list ListFunc) {
	bs := uint64(r.s.cfg.BlockSize)
	r.mu.Lock()
	defer r.mu.Unlock()
	span := min(max(4*(r.next-r.runFrom), 2*bs), uint64(r.s.cfg.ReadAhead)*bs,
		uint64(max(r.s.cfg.CacheSize, 0))/2/bs*bs)
	if span == 0 || r.aheadTo >= off+span/2 {
		return 0, 0, nil
	}
	from, to = max(r.aheadTo, off), off+span
	if r.list == nil {
		to = min(to, chunkEnd)
	}
	r.aheadTo = max(r.aheadTo, to)
	return from, to, r.list
}

// prefetchNext lists chunk index in the background and prefetches its
// range [pos, pos+n).
func (r *Reader) prefetchNext(list ListFunc, index, pos, n uint32) {
	if n == 0 {
		return
	}
	r.s.spawn(func() {
		slices, err := list(r.s.ctx, index)
		if err != nil {
			return // the read itself will report it
		}
		r.mu.Lock()
		painted := r.paint.lookup(index, slices)
		r.mu.Unlock()
		r.s.prefetchRange(painted, pos, n)
	})
}

// warmSpan is the start of a file that Warm prepares: the kernel's first
// read of a file is its read-ahead window, 128 KiB by default.
const warmSpan = 128 << 10

// Warm prepares the first read of a file just opened, whose length is
// length: in the background it lists chunk 0 and loads the blocks of
// [0, min(length, warmSpan)) that such a read fetches whole anyway (small
// blocks, or blocks the read covers a quarter of: readBlock's rule), so
// that the read, which reaches the mount a few kernel round trips after
// the open (a getattr in between), finds them loaded or loading. A large
// block that the read would fetch by range is left alone: Warm never
// fetches what the read would not. It costs the list and the blocks when
// the file is opened but never read.
func (r *Reader) Warm(list ListFunc, length uint64) {
	n := uint32(min(length, warmSpan))
	if n == 0 || r.s.cache.limit == 0 {
		return
	}
	r.s.spawn(func() {
		slices, err := list(r.s.ctx, 0)
		if err != nil {
			return // the read itself will report it
		}
		bs := r.s.cfg.BlockSize
		for _, p := range meta.Resolve(slices, 0, n) {
			if p.ID == 0 {
				continue
			}
			for off, end := int(p.Off), int(p.Off+p.Len); off < end; {
				bi := off / bs
				size := BlockLen(bs, p.Size, bi)
				if size <= off-bi*bs {
					break // corrupt list: the read reports it
				}
				span := min(end, bi*bs+size) - off
				key := BlockKey(p.ID, bi, size)
				if (size <= smallBlock || span*4 >= size) && int64(size) <= r.s.cache.limit {
					_, _ = r.s.cache.load(context.Background(), key,
						func() ([]byte, error) { return r.s.getBlock(key, size) }, r.s.spawn, r.s.run)
				}
				off += span
			}
		}
	})
}

// prefetchRange starts loading the blocks of the data pieces of a chunk
// painting in [pos, pos+n).
func (s *Store) prefetchRange(painted []meta.Slice, pos, n uint32) {
	for _, p := range window(painted, pos, n) {
		if p.ID != 0 {
			s.prefetchPiece(p)
		}
	}
}

// prefetchPiece starts loading every block that piece p touches and
// covers a quarter of (see readPiece: a packed object's block is mostly
// other data).
func (s *Store) prefetchPiece(p meta.Slice) {
	bs := s.cfg.BlockSize
	first := int(p.Off) / bs
	last := (int(p.Off+p.Len) - 1) / bs
	for bi := first; bi <= last; bi++ {
		size := BlockLen(bs, p.Size, bi)
		if size <= 0 {
			return
		}
		key := BlockKey(p.ID, bi, size)
		if s.cache.has(key) || !coversBlock(p, bi*bs, bs) {
			continue
		}
		s.cache.start(key, func() ([]byte, error) { return s.getBlock(key, size) }, s.spawn)
	}
}
