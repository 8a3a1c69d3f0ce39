package data

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shoal/internal/meta"
	"shoal/internal/object"
)

// region is a file range the randomized test exercises: the start of the
// file and the first chunk boundary, so slices and reads cross chunks.
var regions = []struct{ start, size uint64 }{
	{0, 300_000},
	{meta.ChunkSize - 150_000, 300_000},
}

func randomRange(rng *rand.Rand, maxLen int) (uint64, int) {
	r := regions[rng.IntN(len(regions))]
	off := r.start + uint64(rng.IntN(int(r.size)))
	n := 1 + rng.IntN(maxLen)
	if rng.IntN(4) == 0 {
		n = 1 + rng.IntN(64)
	}
	return off, n
}

// TestReaderModel writes random data through a Writer, commits into a
// model engine, and checks random reads (holes, overwrites, punched holes,
// chunk and block boundaries) against a byte image.
func TestReaderModel(t *testing.T) {
	ops := 2500
	if testing.Short() {
		ops = 300
	}
	// Larger blocks move more bytes per op, which the race detector
	// charges per byte: fewer ops keep the run time level.
	for _, c := range []struct {
		bs   int
		idle time.Duration
		ops  int
	}{{4096, 0, ops}, {4096, time.Millisecond, ops}, {20_000, 0, ops / 2}, {64 << 10, 0, ops / 4}} {
		t.Run(fmt.Sprintf("bs=%d/idle=%v", c.bs, c.idle), func(t *testing.T) {
			cfg := Config{BlockSize: c.bs, CacheSize: 20 * int64(c.bs), ReadAhead: 3, IdleCommit: c.idle}
			runModel(t, cfg, c.ops, uint64(c.bs)+uint64(c.idle))
		})
	}
}

func runModel(t *testing.T, cfg Config, ops int, seed uint64) {
	s := newTestStore(t, newMem(), cfg)
	blockSize := cfg.BlockSize
	e := newEngine(nil)
	const ino = 5
	w := s.NewWriter(ino, e.newID, e.committer(ino))
	readers := []*Reader{s.NewReader(ino), s.NewReader(ino)}
	readers[1].SetList(func(_ context.Context, index uint32) ([]meta.Slice, error) {
		return e.slices(ino, index), nil
	})
	rng := rand.New(rand.NewPCG(seed, 99))
	var m model
	for i := 0; i < ops; i++ {
		switch op := rng.IntN(100); {
		case op < 45:
			off, n := randomRange(rng, 3*blockSize)
			p := pattern(byte(i), off, n)
			m.write(off, p)
			writeAll(t, w, off, p)
		case op < 50:
			flush(t, w) // the vfs flushes before it punches a hole
			off, n := randomRange(rng, 2*blockSize)
			punch(e, ino, off, n)
			m.write(off, make([]byte, n))
		case op < 58:
			flush(t, w)
			compactLong(t, s, e, ino, 60)
		default:
			off, n := randomRange(rng, 3*blockSize)
			r := readers[rng.IntN(len(readers))]
			runs := 1
			if rng.IntN(3) == 0 { // a sequential run
				runs = 6
			}
			for k := 0; k < runs; k++ {
				got, err := readPending(e, r, w, ino, off, n)
				if err != nil {
					t.Fatal(err)
				}
				mustEqual(t, fmt.Sprintf("op %d read %d+%d", i, off, n), got, m.read(off, n))
				off += uint64(n)
			}
		}
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "after close", e.readFile(t, readers[0], ino, 0, len(m.data)), m.data)
}

// readPending reads [off, off+n) without flushing, as the vfs does: the
// writer's pending snapshot, then the committed list, then paint.
func readPending(e *engine, r *Reader, w *Writer, ino meta.Ino, off uint64, n int) ([]byte, error) {
	out := make([]byte, n)
	buf := out
	for len(buf) > 0 {
		index := uint32(off / meta.ChunkSize)
		pos := uint32(off % meta.ChunkSize)
		k := min(len(buf), meta.ChunkSize-int(pos))
		list := func(_ context.Context, index uint32) ([]meta.Slice, error) { return e.slices(ino, index), nil }
		if _, err := r.ReadThrough(context.Background(), w, index, list, pos, buf[:k]); err != nil {
			return nil, err
		}
		buf = buf[k:]
		off += uint64(k)
	}
	return out, nil
}

// punch appends hole slices (ID 0) over [off, off+n), as the engine does for
// a punched hole.
func punch(e *engine, ino meta.Ino, off uint64, n int) {
	for n > 0 {
		index := uint32(off / meta.ChunkSize)
		pos := uint32(off % meta.ChunkSize)
		k := min(n, meta.ChunkSize-int(pos))
		e.mu.Lock()
		if e.chunks[ino] == nil {
			e.chunks[ino] = map[uint32][]meta.Slice{}
		}
		e.chunks[ino][index] = append(e.chunks[ino][index], meta.Slice{Pos: pos, Len: uint32(k)})
		e.mu.Unlock()
		off += uint64(k)
		n -= k
	}
}

// getCounter counts Gets and the bytes they asked for.
type getCounter struct {
	object.Store
	gets  atomic.Int64
	whole atomic.Int64 // Gets from offset 0 asking for more than 64 KiB
	asked atomic.Int64
}

func (g *getCounter) Get(ctx context.Context, key string, off, limit int64) (io.ReadCloser, error) {
	g.gets.Add(1)
	g.asked.Add(limit)
	if off == 0 && limit > 64<<10 {
		g.whole.Add(1)
	}
	return g.Store.Get(ctx, key, off, limit)
}

// writeFile writes data at 0 and flushes.
func writeFile(t testing.TB, s *Store, e *engine, ino meta.Ino, data []byte) {
	t.Helper()
	w := s.NewWriter(ino, e.newID, e.committer(ino))
	writeAll(t, w, 0, data)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestReaderReadAhead(t *testing.T) {
	gc := &getCounter{Store: newMem()}
	const bs = 256 << 10
	s := newTestStore(t, gc, Config{BlockSize: bs, ReadAhead: 4})
	e := newEngine(nil)
	data := pattern(4, 0, 40*bs+1234)
	writeFile(t, s, e, 1, data)
	r := s.NewReader(1)
	got := make([]byte, 0, len(data))
	for off := 0; off < len(data); off += 128 << 10 {
		got = append(got, e.readFile(t, r, 1, uint64(off), min(128<<10, len(data)-off))...)
	}
	mustEqual(t, "sequential read", got, data)
	s.wg.Wait() // let prefetches settle
	blocks := int64(BlockCount(bs, uint32(len(data))))
	if n := gc.gets.Load(); n > blocks+2 {
		t.Fatalf("%d Gets for %d blocks: blocks fetched more than once", n, blocks)
	}
	if gc.whole.Load() < blocks-1 {
		t.Fatalf("only %d whole-block Gets of %d", gc.whole.Load(), blocks)
	}
}

// TestCacheMissesCountFetches: a cache miss is a block fetched from the
// store, whether a read or its read-ahead fetched it, so a sequential read
// whose read-ahead always wins still counts one miss per block (and a
// read served by the block read-ahead brought in is no miss again).
func TestCacheMissesCountFetches(t *testing.T) {
	gc := &getCounter{Store: newMem()}
	const bs = 64 << 10
	s := newTestStore(t, gc, Config{BlockSize: bs, ReadAhead: 4})
	e := newEngine(nil)
	data := pattern(9, 0, 12*bs)
	writeFile(t, s, e, 1, data)
	before := s.Stats()
	r := s.NewReader(1)
	for off := 0; off < len(data); off += bs / 2 {
		mustEqual(t, "sequential read", e.readFile(t, r, 1, uint64(off), bs/2), data[off:off+bs/2])
		s.wg.Wait() // read-ahead wins every race
	}
	st := s.Stats()
	misses, gets := st.CacheMisses-before.CacheMisses, gc.gets.Load()
	if blocks := int64(12); misses != gets || misses < blocks {
		t.Fatalf("%d cache misses, %d Gets for %d blocks: want one miss per block fetched", misses, gets, blocks)
	}
	again := s.Stats()
	mustEqual(t, "second read", e.readFile(t, r, 1, 0, len(data)), data)
	if st := s.Stats(); st.CacheMisses != again.CacheMisses || st.CacheHits <= again.CacheHits {
		t.Fatalf("reading cached blocks: misses %d→%d, hits %d→%d", again.CacheMisses, st.CacheMisses, again.CacheHits, st.CacheHits)
	}
}

func TestReaderRandomRangedGet(t *testing.T) {
	gc := &getCounter{Store: newMem()}
	const bs = 1 << 20
	s := newTestStore(t, gc, Config{BlockSize: bs})
	e := newEngine(nil)
	data := pattern(6, 0, 4*bs)
	writeFile(t, s, e, 1, data)
	r := s.NewReader(1)
	for _, off := range []uint64{2*bs + 8192, 100_000, 3*bs + 4096*7} {
		mustEqual(t, "random read", e.readFile(t, r, 1, off, 4096), data[off:off+4096])
	}
	if got := gc.asked.Load(); got != 3*4096 {
		t.Fatalf("random 4 KiB reads asked for %d bytes, want %d", got, 3*4096)
	}
}

func TestReaderCacheBound(t *testing.T) {
	const bs = 64 << 10
	s := newTestStore(t, newMem(), Config{BlockSize: bs, CacheSize: 3 * bs, ReadAhead: 2})
	e := newEngine(nil)
	data := pattern(7, 0, 30*bs)
	writeFile(t, s, e, 1, data)
	r := s.NewReader(1)
	for off := 0; off < len(data); off += bs / 2 {
		mustEqual(t, "read", e.readFile(t, r, 1, uint64(off), bs/2), data[off:off+bs/2])
		if n := s.cache.size(); n > 3*bs {
			t.Fatalf("cache holds %d bytes, limit %d", n, 3*bs)
		}
	}
	s.wg.Wait()
	if n := s.cache.size(); n > 3*bs || n == 0 {
		t.Fatalf("cache holds %d bytes, limit %d", n, 3*bs)
	}
}

// damager is the memstore's fault-injection surface.
type damager interface {
	Corrupt(string, []byte)
	Delete(context.Context, string) error
}

func TestReaderDamagedObjects(t *testing.T) {
	const bs = 4096
	cases := []struct {
		name   string
		damage func(m damager, key string)
		want   error
	}{
		{"missing", func(m damager, key string) {
			_ = m.Delete(context.Background(), key)
		}, object.ErrNotExist},
		{"short", func(m damager, key string) {
			m.Corrupt(key, make([]byte, bs-1))
		}, ErrCorrupt},
		{"oversized", func(m damager, key string) {
			m.Corrupt(key, make([]byte, bs+1))
		}, ErrCorrupt},
	}
	for _, c := range cases {
		for _, seq := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/seq=%v", c.name, seq), func(t *testing.T) {
				mem := newMem()
				s := newTestStore(t, mem, Config{BlockSize: bs})
				e := newEngine(nil)
				writeFile(t, s, e, 3, pattern(1, 0, 3*bs))
				sl := e.slices(3, 0)[0]
				key := BlockKey(sl.ID, 1, bs)
				c.damage(mem, key)
				off := uint32(bs + 10)
				if seq {
					off = 0 // first read at 0 counts as sequential
				}
				buf := make([]byte, 2*bs)
				_, err := s.NewReader(3).Read(context.Background(), 0, e.slices(3, 0), off, buf)
				if !errors.Is(err, c.want) {
					t.Fatalf("err = %v, want %v", err, c.want)
				}
				for _, part := range []string{key, "inode 3", "offset 4096"} {
					if seq || part != "offset 4096" {
						if !strings.Contains(err.Error(), part) {
							t.Fatalf("error %q does not name %q", err, part)
						}
					}
				}
			})
		}
	}
}

// TestParallelInodes runs writers and readers of several inodes at once.
func TestParallelInodes(t *testing.T) {
	s := newTestStore(t, newMem(), Config{BlockSize: 16 << 10, BufferSize: 1 << 20, CacheSize: 512 << 10})
	e := newEngine(nil)
	var wg sync.WaitGroup
	for i := 1; i <= 4; i++ {
		wg.Add(1)
		go func(ino meta.Ino) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(ino), 1))
			w := s.NewWriter(ino, e.newID, e.committer(ino))
			r := s.NewReader(ino)
			var m model
			for op := 0; op < 300; op++ {
				off := uint64(rng.IntN(500_000))
				p := pattern(byte(op), off, 1+rng.IntN(40_000))
				m.write(off, p)
				if err := w.Write(context.Background(), off, p); err != nil {
					t.Error(err)
					return
				}
				if op%10 == 9 {
					if err := w.Flush(context.Background()); err != nil {
						t.Error(err)
						return
					}
					off, n := uint64(rng.IntN(len(m.data))), 1+rng.IntN(50_000)
					if err := checkRead(e, r, ino, off, m.read(off, n)); err != nil {
						t.Error(err)
						return
					}
				}
			}
			if err := w.Close(context.Background()); err != nil {
				t.Error(err)
			}
			if err := checkRead(e, r, ino, 0, m.data); err != nil {
				t.Error(err)
			}
		}(meta.Ino(i))
	}
	wg.Wait()
}

// checkRead reads len(want) bytes at off and compares; safe off the test
// goroutine.
func checkRead(e *engine, r *Reader, ino meta.Ino, off uint64, want []byte) error {
	got, err := e.readFileE(r, ino, off, len(want))
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("ino %d read %d+%d: wrong bytes", ino, off, len(want))
	}
	return nil
}

// TestReaderChecksumCorrupt: a checksum wrapper's verdict surfaces as
// ErrCorrupt, for whole-block and ranged reads alike.
func TestReaderChecksumCorrupt(t *testing.T) {
	mem := newMem()
	const bs = 256 << 10
	s := newTestStore(t, object.WithChecksum(mem), Config{BlockSize: bs})
	e := newEngine(nil)
	writeFile(t, s, e, 1, pattern(1, 0, 8*bs))
	sl := e.slices(1, 0)[0]
	key := BlockKey(sl.ID, 5, bs)
	rc, err := mem.Get(context.Background(), key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(rc)
	rc.Close()
	raw[20+(64<<10)+12+(100_000-(64<<10))] ^= 0xff // data byte 100000
	mem.Corrupt(key, raw)
	for _, c := range []struct {
		off uint32
		n   int
	}{{5*bs + 100_000, 4096}, {4 * bs, 2 * bs}} { // random (ranged), then sequential
		_, err := s.NewReader(1).Read(context.Background(), 0, e.slices(1, 0), c.off, make([]byte, c.n))
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), key) {
			t.Fatalf("read at %d of a corrupt block: %v", c.off, err)
		}
	}
}

// TestReaderNoCache: with the cache disabled, a sequential reader reads
// only the bytes it asks for.
func TestReaderNoCache(t *testing.T) {
	gc := &getCounter{Store: newMem()}
	const bs = 256 << 10
	s := newTestStore(t, gc, Config{BlockSize: bs, CacheSize: -1})
	e := newEngine(nil)
	data := pattern(4, 0, 4*bs)
	writeFile(t, s, e, 1, data)
	r := s.NewReader(1)
	for off := 0; off < len(data); off += 64 << 10 {
		mustEqual(t, "read", e.readFile(t, r, 1, uint64(off), 64<<10), data[off:off+64<<10])
	}
	if got := gc.asked.Load(); got != int64(len(data)) {
		t.Fatalf("asked for %d bytes to read %d", got, len(data))
	}
}

// TestReaderReadAheadCrossesChunks: with a ListFunc, read-ahead loads the
// next chunk's first blocks before the stream gets there.
func TestReaderReadAheadCrossesChunks(t *testing.T) {
	const bs = 64 << 10
	s := newTestStore(t, newMem(), Config{BlockSize: bs, ReadAhead: 8})
	e := newEngine(nil)
	start := uint64(meta.ChunkSize - 16*bs)
	data := pattern(9, start, 32*bs)
	w := s.NewWriter(1, e.newID, e.committer(1))
	writeAll(t, w, start, data)
	flush(t, w)
	r := s.NewReader(1)
	var lists atomic.Int64
	r.SetList(func(_ context.Context, index uint32) ([]meta.Slice, error) {
		lists.Add(1)
		return e.slices(1, index), nil
	})
	for off := start; off < meta.ChunkSize-bs; off += bs / 2 {
		mustEqual(t, "read", e.readFile(t, r, 1, off, bs/2), data[off-start:off-start+bs/2])
	}
	s.wg.Wait()
	next := e.slices(1, 1)[0]
	if lists.Load() == 0 || !s.cache.has(BlockKey(next.ID, 0, bs)) {
		t.Fatalf("next chunk not prefetched (%d list calls)", lists.Load())
	}
	got := e.readFile(t, r, 1, start, len(data))
	mustEqual(t, "whole", got, data)
}
