package data

import (
	"slices"
	"testing"

	"shoal/internal/meta"
)

func longList(n int, seed uint32) []meta.Slice {
	ss := make([]meta.Slice, n)
	for i := range ss {
		pos := (uint32(i)*7919 + seed) % (meta.ChunkSize - 8192)
		ss[i] = meta.Slice{ID: meta.SliceID(i + 1), Size: 8192, Len: 8192, Pos: pos}
	}
	return ss
}

// TestSharedPaints: a long list is painted after paintAfter reads, the
// painting is Resolve's, another list for the chunk (even with the same
// contents) starts over, and short lists are never painted.
func TestSharedPaints(t *testing.T) {
	var sp sharedPaints
	list := longList(300, 1)
	for i := 1; i < paintAfter; i++ {
		if p := sp.lookup(1, 0, list); p != nil {
			t.Fatalf("read %d: painted before %d reads", i, paintAfter)
		}
	}
	p := sp.lookup(1, 0, list)
	if !slices.Equal(p, meta.Resolve(list, 0, meta.ChunkSize)) {
		t.Fatalf("painting differs from Resolve")
	}
	if q := sp.lookup(1, 0, list); !sameList(p, q) {
		t.Fatalf("painting not kept")
	}
	if q := sp.lookup(2, 0, list); q != nil {
		t.Fatalf("another inode shares the painting")
	}
	changed := slices.Clone(list) // a new list: identity, not contents, counts
	if q := sp.lookup(1, 0, changed); q != nil {
		t.Fatalf("a new list used the old painting")
	}
	short := longList(paintMinLen-1, 2)
	for range 2 * paintAfter {
		if sp.lookup(1, 1, short) != nil {
			t.Fatalf("short list painted")
		}
	}
	for i := range maxSharedPaints + 10 {
		sp.lookup(meta.Ino(100+i), 0, list)
	}
	if n := len(sp.m); n > maxSharedPaints {
		t.Fatalf("%d entries kept, limit %d", n, maxSharedPaints)
	}
}
