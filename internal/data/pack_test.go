package data

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"shoal/internal/meta"
)

// TestPackSmallWrites: random 4 KiB writes over two chunks are stored in a
// few packed objects, not one per write; every record of a pack after its
// first is Shared; and the file reads back exactly, also after another
// round of writes over the first.
func TestPackSmallWrites(t *testing.T) {
	mem := newMem()
	s := newTestStore(t, mem, Config{BlockSize: 1 << 20})
	e := newEngine(nil)
	inner := e.committer(1)
	var mu sync.Mutex
	seen := map[meta.SliceID]bool{}
	records := 0
	w := s.NewWriter(1, e.newID, func(ctx context.Context, ws []meta.SliceWrite) error {
		mu.Lock()
		for _, r := range ws {
			if r.Shared != seen[r.S.ID] {
				mu.Unlock()
				return fmt.Errorf("record %v: Shared=%v, but id seen before=%v", r.S, r.Shared, seen[r.S.ID])
			}
			seen[r.S.ID] = true
			records++
		}
		mu.Unlock()
		return inner(ctx, ws)
	})
	rng := rand.New(rand.NewPCG(7, 7))
	var m model
	const writes = 600
	for round := 0; round < 2; round++ {
		for i := 0; i < writes; i++ {
			off := uint64(rng.IntN(2*meta.ChunkSize/4096)) * 4096
			p := pattern(byte(i+round), off, 4096)
			m.write(off, p)
			writeAll(t, w, off, p)
		}
		flush(t, w)
		got, err := e.readFileE(s.NewReader(1), 1, 0, len(m.data))
		if err != nil {
			t.Fatal(err)
		}
		mustEqual(t, fmt.Sprintf("round %d", round), got, m.data)
	}
	objs, err := mem.List(context.Background(), "", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if records < writes || len(objs) > records/50 {
		t.Fatalf("%d records stored in %d objects: small writes were not packed", records, len(objs))
	}
}
