package meta

import (
	"cmp"
	"slices"
)

// Resolve paints a chunk's slice list (oldest first) and returns the pieces
// visible in [pos, pos+length): consecutive, non-overlapping slices that
// cover the window exactly, with holes (ID 0) where nothing was written.
// Each piece keeps its slice's ID and Size; Off and Len are narrowed to the
// visible part. Resolve does not modify list.
//
// It sweeps the window once: the slices that touch it become events at
// their ends, and between two event positions the newest slice covering
// the range (the largest list index, kept in a max-heap) is the visible
// one. That is O(k log k) for the k slices touching the window, so a
// whole-chunk painting of a chunk of thousands of random writes stays
// cheap (painting each slice over a list was O(k²)), and a small read or
// commit pays mostly for one scan of the list.
func Resolve(list []Slice, pos, length uint32) []Slice {
	end := pos + length
	type event struct {
		at    uint32
		idx   int
		start bool
	}
	var evs []event
	for i, s := range list {
		from, to := max(s.Pos, pos), min(s.Pos+s.Len, end)
		if from < to {
			evs = append(evs, event{from, i, true}, event{to, i, false})
		}
	}
	out := make([]Slice, 0, 4)
	if len(evs) == 0 {
		return append(out, Slice{Pos: pos, Len: length})
	}
	slices.SortFunc(evs, func(a, b event) int { return cmp.Compare(a.at, b.at) })
	var active maxHeap
	last := -2 // list index of the last piece emitted; -1 for a gap
	emit := func(from, to uint32, idx int) {
		if from >= to {
			return
		}
		if n := len(out); n > 0 && idx == last {
			out[n-1].Len += to - from
			return
		}
		last = idx
		if idx < 0 {
			out = append(out, Slice{Pos: from, Len: to - from})
			return
		}
		out = append(out, cut(list[idx], from, to))
	}
	at := pos
	for k := 0; k < len(evs); {
		x := evs[k].at
		emit(at, x, active.top())
		for ; k < len(evs) && evs[k].at == x; k++ {
			if evs[k].start {
				active.push(evs[k].idx)
			}
		}
		// An end event only marks a position: a slice on top that ends
		// at or before it is done (lazy deletion from the heap).
		for len(active) > 0 && list[active[0]].Pos+list[active[0]].Len <= x {
			active.pop()
		}
		at = x
	}
	emit(at, end, -1)
	return out
}

// maxHeap is a binary max-heap of list indexes.
type maxHeap []int

func (h maxHeap) top() int {
	if len(h) == 0 {
		return -1
	}
	return h[0]
}

func (h *maxHeap) push(v int) {
	a := append(*h, v)
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p] >= a[i] {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
	*h = a
}

func (h *maxHeap) pop() {
	a := *h
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l, r, big := 2*i+1, 2*i+2, i
		if l < n && a[l] > a[big] {
			big = l
		}
		if r < n && a[r] > a[big] {
			big = r
		}
		if big == i {
			break
		}
		a[i], a[big] = a[big], a[i]
		i = big
	}
	*h = a
}

// cut narrows s to the chunk range [from, to), which must lie within it.
func cut(s Slice, from, to uint32) Slice {
	if s.ID != 0 {
		s.Off += from - s.Pos
	}
	s.Pos, s.Len = from, to-from
	return s
}

// Extent returns the end of the furthest slice in a chunk list.
func Extent(slices []Slice) uint32 {
	var end uint32
	for _, s := range slices {
		end = max(end, s.Pos+s.Len)
	}
	return end
}
