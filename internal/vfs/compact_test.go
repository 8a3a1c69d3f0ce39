package vfs

import (
	"testing"

	"shoal/internal/meta"
)

func TestWorthCompacting(t *testing.T) {
	small := func(n int, pos uint32) []meta.Slice {
		out := []meta.Slice{{ID: 1, Size: 32 << 20, Len: 32 << 20}}
		for i := 0; i < n; i++ {
			out = append(out, meta.Slice{ID: meta.SliceID(i + 2), Size: 4096, Len: 4096, Pos: pos + uint32(i)*4096*7})
		}
		return out
	}
	overwrites := func(n int) []meta.Slice {
		var out []meta.Slice
		for i := 0; i < n; i++ {
			out = append(out, meta.Slice{ID: meta.SliceID(i + 1), Size: 4 << 20, Len: 4 << 20})
		}
		return out
	}
	tests := []struct {
		name   string
		slices []meta.Slice
		want   bool
	}{
		{"few slices", overwrites(5), false},
		{"many full overwrites", overwrites(40), true},
		{"random 4K over a big extent", small(100, 0), false},
		{"too many slices", small(maxSlices, 0), true},
	}
	for _, tt := range tests {
		if got := worthCompacting(tt.slices, 32); got != tt.want {
			t.Errorf("%s: got %v want %v", tt.name, got, tt.want)
		}
	}
}
