package data

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"shoal/internal/meta"
)

// TestWindowMatchesResolve: reading windows from a cached whole-chunk
// painting gives exactly what meta.Resolve gives for the window.
func TestWindowMatchesResolve(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	var p paintings
	for round := 0; round < 300; round++ {
		var list []meta.Slice
		for i := rng.IntN(40); i > 0; i-- {
			size := uint32(1 + rng.IntN(1<<20))
			off := uint32(rng.IntN(int(size)))
			s := meta.Slice{ID: meta.SliceID(1 + rng.IntN(1000)), Size: size, Off: off,
				Len: 1 + uint32(rng.IntN(int(size-off))), Pos: uint32(rng.IntN(4 << 20))}
			if rng.IntN(5) == 0 {
				s = meta.Slice{Pos: s.Pos, Len: s.Len}
			}
			list = append(list, s)
		}
		index := uint32(rng.IntN(3))
		for k := 0; k < 20; k++ {
			pos := uint32(rng.IntN(6 << 20))
			n := uint32(1 + rng.IntN(1<<20))
			got := window(p.lookup(index, list), pos, n)
			want := meta.Resolve(list, pos, n)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d window %d+%d:\n got %v\nwant %v\nlist %v", round, pos, n, got, want, list)
			}
		}
	}
}

// TestPaintingNotStale: a list changed in place (same backing array) is
// painted afresh.
func TestPaintingNotStale(t *testing.T) {
	var p paintings
	list := []meta.Slice{{ID: 1, Size: 10, Len: 10, Pos: 0}}
	_ = p.lookup(0, list)
	list[0].ID = 2
	if got := window(p.lookup(0, list), 0, 10); got[0].ID != 2 {
		t.Fatalf("stale painting: %v", got)
	}
}
