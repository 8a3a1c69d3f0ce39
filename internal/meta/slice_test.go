package meta

import (
	"math/rand"
	"reflect"
	"testing"
)

func TestResolveTable(t *testing.T) {
	tests := []struct {
		name     string
		slices   []Slice
		pos, len uint32
		want     []Slice
	}{
		{"empty", nil, 0, 10, []Slice{{Pos: 0, Len: 10}}},
		{"one", []Slice{{ID: 1, Size: 10, Len: 10}}, 2, 4, []Slice{{ID: 1, Size: 10, Off: 2, Pos: 2, Len: 4}}},
		{"shadow middle", []Slice{{ID: 1, Size: 10, Len: 10}, {ID: 2, Size: 2, Pos: 4, Len: 2}}, 0, 10, []Slice{
			{ID: 1, Size: 10, Len: 4}, {ID: 2, Size: 2, Pos: 4, Len: 2}, {ID: 1, Size: 10, Off: 6, Pos: 6, Len: 4}}},
		{"hole between", []Slice{{ID: 1, Size: 2, Len: 2}, {ID: 2, Size: 2, Pos: 6, Len: 2}}, 0, 10, []Slice{
			{ID: 1, Size: 2, Len: 2}, {Pos: 2, Len: 4}, {ID: 2, Size: 2, Pos: 6, Len: 2}, {Pos: 8, Len: 2}}},
		{"hole slice shadows", []Slice{{ID: 1, Size: 10, Len: 10}, {Pos: 5, Len: 5}}, 0, 10, []Slice{
			{ID: 1, Size: 10, Len: 5}, {Pos: 5, Len: 5}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Resolve(tt.slices, tt.pos, tt.len); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v\nwant %v", got, tt.want)
			}
		})
	}
}

// TestResolveModel checks Resolve against a byte-per-position painter.
func TestResolveModel(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	const size = 64
	for round := 0; round < 2000; round++ {
		var slices []Slice
		model := make([]int64, size) // id*1000+offset into slice data, -1 = hole
		for i := range model {
			model[i] = -1
		}
		for n := rng.Intn(8); n > 0; n-- {
			pos := uint32(rng.Intn(size))
			ln := uint32(rng.Intn(size-int(pos))) + 1
			id := SliceID(len(slices) + 1)
			off := uint32(rng.Intn(5))
			if rng.Intn(6) == 0 {
				id = 0
			}
			s := Slice{ID: id, Size: off + ln, Off: off, Len: ln, Pos: pos}
			slices = append(slices, s)
			for i := pos; i < pos+ln; i++ {
				if id == 0 {
					model[i] = -1
				} else {
					model[i] = int64(id)*1000 + int64(off+i-pos)
				}
			}
		}
		pos := uint32(rng.Intn(size))
		ln := uint32(rng.Intn(size-int(pos))) + 1
		at := pos
		for _, p := range Resolve(slices, pos, ln) {
			if p.Pos != at {
				t.Fatalf("gap at %d: %v", at, p)
			}
			for i := uint32(0); i < p.Len; i++ {
				want := model[p.Pos+i]
				got := int64(-1)
				if p.ID != 0 {
					got = int64(p.ID)*1000 + int64(p.Off+i)
				}
				if got != want {
					t.Fatalf("round %d pos %d: got %d want %d (%v)", round, p.Pos+i, got, want, slices)
				}
			}
			at += p.Len
		}
		if at != pos+ln {
			t.Fatalf("covered up to %d, want %d", at, pos+ln)
		}
	}
}

// BenchmarkResolveSmallWindow resolves a 4 KiB window in a chunk of 4,096
// random 4 KiB writes: the cost must follow the slices in the window.
func BenchmarkResolveSmallWindow(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	var slices []Slice
	for i := 0; i < 4096; i++ {
		slices = append(slices, Slice{ID: SliceID(i + 1), Size: 4096, Len: 4096, Pos: uint32(rng.Intn(ChunkSize/4096)) * 4096})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Resolve(slices, uint32(i%(ChunkSize/4096))*4096, 4096)
	}
}

// resolveSlow is the first Resolve (paint every slice over a sorted list),
// kept as the reference the sweep is checked against.
func resolveSlow(slices []Slice, pos, length uint32) []Slice {
	end := pos + length
	var painted []Slice
	for _, s := range slices {
		from, to := max(s.Pos, pos), min(s.Pos+s.Len, end)
		if from < to {
			painted = paintSlow(painted, cut(s, from, to))
		}
	}
	out := make([]Slice, 0, 4)
	at := pos
	for _, p := range painted {
		pEnd := p.Pos + p.Len
		if pEnd <= at || p.Pos >= end {
			continue
		}
		if p.Pos > at {
			out = append(out, Slice{Pos: at, Len: p.Pos - at})
			at = p.Pos
		}
		out = append(out, cut(p, at, min(pEnd, end)))
		at = min(pEnd, end)
	}
	if at < end {
		out = append(out, Slice{Pos: at, Len: end - at})
	}
	return out
}

// paintSlow lays s over the sorted, non-overlapping list painted.
func paintSlow(painted []Slice, s Slice) []Slice {
	sEnd := s.Pos + s.Len
	out := make([]Slice, 0, len(painted)+2)
	inserted := false
	for _, p := range painted {
		pEnd := p.Pos + p.Len
		if pEnd <= s.Pos || p.Pos >= sEnd {
			if !inserted && p.Pos >= sEnd {
				out = append(out, s)
				inserted = true
			}
			out = append(out, p)
			continue
		}
		if p.Pos < s.Pos {
			out = append(out, cut(p, p.Pos, s.Pos))
		}
		if !inserted {
			out = append(out, s)
			inserted = true
		}
		if pEnd > sEnd {
			out = append(out, cut(p, sEnd, pEnd))
		}
	}
	if !inserted {
		out = append(out, s)
	}
	return out
}

// TestResolveMatchesReference compares Resolve with resolveSlow on random
// lists of many overlapping slices, windows and holes, piece for piece.
func TestResolveMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for round := 0; round < 3000; round++ {
		size := uint32(16 + rng.Intn(4000))
		var slices []Slice
		for n := rng.Intn(60); n > 0; n-- {
			pos := uint32(rng.Intn(int(size)))
			ln := uint32(rng.Intn(int(size-pos))) + 1
			id := SliceID(1 + rng.Intn(20)) // repeated ids, as packed and cloned records have
			if rng.Intn(8) == 0 {
				id = 0
			}
			off := uint32(rng.Intn(100))
			slices = append(slices, Slice{ID: id, Size: off + ln + uint32(rng.Intn(9)), Off: off, Len: ln, Pos: pos})
		}
		pos := uint32(rng.Intn(int(size)))
		ln := uint32(rng.Intn(int(size-pos))) + 1
		if round%4 == 0 {
			pos, ln = 0, size
		}
		got, want := Resolve(slices, pos, ln), resolveSlow(slices, pos, ln)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: Resolve(%v, %d, %d)\n got %v\nwant %v", round, slices, pos, ln, got, want)
		}
	}
}
