package data

import (
	"context"
	"testing"

	"shoal/internal/meta"
)

// TestWarmLoadsFirstRead: Warm lists chunk 0 and loads, in the
// background, the blocks the first read would fetch whole (here both
// blocks of a 100 KiB file of 64 KiB blocks), so that the read is served
// from the cache; a block that read would fetch by range (a quarter of a
// 1 MiB block is more than the 128 KiB it reads) is left alone, and an
// empty file is not listed.
func TestWarmLoadsFirstRead(t *testing.T) {
	mem := newMem()
	e := newEngine(nil)
	const small, big = meta.Ino(1), meta.Ino(2)
	for _, f := range []struct {
		ino  meta.Ino
		bs   int
		size int
	}{{small, 64 << 10, 100 << 10}, {big, 1 << 20, 1 << 20}} {
		ws := newTestStore(t, mem, Config{BlockSize: f.bs})
		w := ws.NewWriter(f.ino, e.newID, e.committer(f.ino))
		writeAll(t, w, 0, pattern(byte(f.ino), 0, f.size))
		flush(t, w)
	}
	list := func(ino meta.Ino, lists *int) ListFunc {
		return func(_ context.Context, index uint32) ([]meta.Slice, error) {
			*lists++
			return e.slices(ino, index), nil
		}
	}

	// A Store of its own: its wait group counts only Warm's goroutine.
	s := New(mem, Config{BlockSize: 64 << 10, Logger: discardLogger()})
	var lists int
	r := s.NewReader(small)
	r.Warm(list(small, &lists), 100<<10)
	s.wg.Wait()
	if st := s.Stats(); lists != 1 || st.BlocksFetched != 2 || st.CacheMisses != 2 {
		t.Fatalf("after Warm: %d lists, %+v; want one list and both blocks fetched", lists, st)
	}
	mustEqual(t, "read after Warm", e.readFile(t, r, small, 0, 100<<10), pattern(byte(small), 0, 100<<10))
	if st := s.Stats(); st.BlocksFetched != 2 || st.RangesFetched != 0 || st.CacheHits != 2 {
		t.Fatalf("read after Warm: %+v; want both blocks from the cache", st)
	}
	s.Close()

	s = New(mem, Config{BlockSize: 1 << 20, Logger: discardLogger()})
	defer s.Close()
	lists = 0
	s.NewReader(big).Warm(list(big, &lists), 1<<20)
	s.NewReader(big).Warm(list(big, &lists), 0)
	s.wg.Wait()
	if st := s.Stats(); lists != 1 || st.BlocksFetched != 0 || st.RangesFetched != 0 {
		t.Fatalf("Warm of a 1 MiB block and of an empty file: %d lists, %+v; want one list, nothing fetched", lists, st)
	}
}
