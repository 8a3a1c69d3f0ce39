package data

import (
	"context"
	"io"
	"sync"
	"testing"

	"shoal/internal/object"
)

// hintStore records, per stored key, whether the Put carried
// object.WithReadSoon.
type hintStore struct {
	object.Store
	mu   sync.Mutex
	soon map[string]bool
}

func (h *hintStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	err := h.Store.Put(ctx, key, r, size)
	if err == nil {
		h.mu.Lock()
		h.soon[key] = object.ReadSoon(ctx)
		h.mu.Unlock()
	}
	return err
}

func (h *hintStore) Unwrap() object.Store { return h.Store }

// take returns the hints recorded since the last call, as counts.
func (h *hintStore) take() (soon, not int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, v := range h.soon {
		if v {
			soon++
		} else {
			not++
		}
	}
	clear(h.soon)
	return soon, not
}

// TestReadSoonHints: compaction output is stored as read-soon; whole
// blocks of a sequential write and packs of small writes are not.
func TestReadSoonHints(t *testing.T) {
	hs := &hintStore{Store: newMem(), soon: map[string]bool{}}
	const bs = 64 << 10
	s := newTestStore(t, hs, Config{BlockSize: bs})
	e := newEngine(nil)
	w := s.NewWriter(1, e.newID, e.committer(1))

	writeAll(t, w, 0, pattern(1, 0, 8*bs)) // sequential: whole blocks
	flush(t, w)
	if soon, not := hs.take(); soon != 0 || not == 0 {
		t.Fatalf("sequential write: %d read-soon puts, %d others; want whole blocks without the hint", soon, not)
	}

	for i := range 64 { // scattered small writes: packed
		off := uint64((i*37)%128) * 4096
		writeAll(t, w, off, pattern(byte(i), off, 4096))
	}
	flush(t, w)
	if soon, not := hs.take(); soon != 0 || not == 0 {
		t.Fatalf("small writes: %d read-soon puts, %d others; want packs without the hint", soon, not)
	}

	compactLong(t, s, e, 1, 0)
	if soon, not := hs.take(); soon == 0 || not != 0 {
		t.Fatalf("compaction: %d read-soon puts, %d others; want its blocks with the hint", soon, not)
	}
	if got := len(e.slices(1, 0)); got == 0 {
		t.Fatal("compaction left no slices")
	}
}
