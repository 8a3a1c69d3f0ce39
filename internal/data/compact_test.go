package data

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"shoal/internal/meta"
)

// compactLong compacts every chunk of ino whose list is longer than limit,
// as a background compactor would, swaps the lists and deletes the
// replaced slices' objects: reads that still needed them would fail.
func compactLong(t testing.TB, s *Store, e *engine, ino meta.Ino, limit int) {
	t.Helper()
	e.mu.Lock()
	var long []uint32
	for index, list := range e.chunks[ino] {
		if len(list) > limit {
			long = append(long, index)
		}
	}
	e.mu.Unlock()
	for _, index := range long {
		old := e.slices(ino, index)
		repl, err := s.Compact(context.Background(), ino, index, old, e.newID)
		if err != nil {
			t.Fatalf("compact chunk %d: %v", index, err)
		}
		e.mu.Lock()
		e.chunks[ino][index] = repl
		live := map[meta.SliceID]bool{} // a packed object is shared by records of other chunks
		for _, chunks := range e.chunks {
			for _, list := range chunks {
				for _, sl := range list {
					live[sl.ID] = true
				}
			}
		}
		e.mu.Unlock()
		for _, sl := range old {
			if sl.ID != 0 && !live[sl.ID] {
				live[sl.ID] = true // delete once
				if err := s.DeleteSlice(context.Background(), sl.ID, sl.Size); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func TestCompactEquivalent(t *testing.T) {
	mem := newMem()
	const bs = 16 << 10
	s := newTestStore(t, mem, Config{BlockSize: bs})
	e := newEngine(nil)
	w := s.NewWriter(1, e.newID, e.committer(1))
	rng := rand.New(rand.NewPCG(8, 8))
	var m model
	for i := 0; i < 400; i++ {
		// Data in [0, 1 MiB) and [5 MiB, 6 MiB): a 4 MiB hole between.
		off := uint64(rng.IntN(1<<20)) + uint64(rng.IntN(2))*(5<<20)
		p := pattern(byte(i), off, 1+rng.IntN(20_000))
		m.write(off, p)
		writeAll(t, w, off, p)
		if i%7 == 0 {
			flush(t, w)
		}
		if i%50 == 0 {
			punch(e, 1, uint64(rng.IntN(6<<20)), 1+rng.IntN(100_000))
			flush(t, w) // punch must follow the writes it hides
			m.data = readAll(t, s, e, 1, len(m.data))
		}
	}
	flush(t, w)
	before := e.slices(1, 0)
	want := readAll(t, s, e, 1, len(m.data))
	mustEqual(t, "before compaction", want, m.data)
	compactLong(t, s, e, 1, 0)
	after := e.slices(1, 0)
	if len(after) > 3 || len(after) == 0 {
		t.Fatalf("compacted %d slices into %d: %v", len(before), len(after), after)
	}
	mustEqual(t, "after compaction", readAll(t, s, e, 1, len(m.data)), m.data)
	objs, err := mem.List(context.Background(), "chunks/", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var stored int64
	for _, o := range objs {
		stored += o.Size
	}
	if stored > 2<<20+2*bs {
		t.Fatalf("compaction stored %d bytes for 2 MiB of data: the hole was written", stored)
	}
}

// TestCompactReadError: a missing block fails compaction cleanly and leaves
// no new objects behind.
func TestCompactReadError(t *testing.T) {
	mem := newMem()
	s := newTestStore(t, mem, Config{BlockSize: 4096})
	e := newEngine(nil)
	writeFile(t, s, e, 1, pattern(1, 0, 50_000))
	old := e.slices(1, 0)
	_ = mem.Delete(context.Background(), BlockKey(old[0].ID, 10, 4096))
	_, err := s.Compact(context.Background(), 1, 0, old, e.newID)
	if err == nil || !strings.Contains(err.Error(), "chunks/") {
		t.Fatalf("compact over a missing block: %v", err)
	}
	objs, _ := mem.List(context.Background(), "chunks/", "", 0)
	for _, o := range objs {
		if !strings.Contains(o.Key, fmt.Sprintf("/%d_", old[0].ID)) {
			t.Fatalf("left new object %s behind", o.Key)
		}
	}
}

func TestDeleteSlice(t *testing.T) {
	mem := newMem()
	s := newTestStore(t, mem, Config{BlockSize: 4096})
	e := newEngine(nil)
	writeFile(t, s, e, 1, pattern(1, 0, 3*4096+5))
	sl := e.slices(1, 0)[0]
	for i := 0; i < 2; i++ { // idempotent
		if err := s.DeleteSlice(context.Background(), sl.ID, sl.Size); err != nil {
			t.Fatal(err)
		}
	}
	if objs, _ := mem.List(context.Background(), "", "", 0); len(objs) != 0 {
		t.Fatalf("objects left: %v", objs)
	}
}

func readAll(t testing.TB, s *Store, e *engine, ino meta.Ino, n int) []byte {
	t.Helper()
	return e.readFile(t, s.NewReader(ino), ino, 0, n)
}
