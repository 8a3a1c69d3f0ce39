package data

import (
	"slices"
	"sort"

	"shoal/internal/meta"
)

// paintings is a Reader's small cache of resolved chunks. meta.Resolve
// paints the whole slice list on every call, which costs O(n²) in the
// list length; a fragmented chunk read 128 KiB at a time would pay that
// per read. Caching the painting of the whole chunk turns each read into a
// list comparison and a binary search.
//
// An entry is used only if the caller's list equals the one it was built
// from, element by element (the list is copied): a changed list, even one
// reusing the same backing array, never returns a stale painting.
type paintings struct {
	entries [4]painting
	next    int // round-robin replacement
}

type painting struct {
	valid   bool
	index   uint32
	src     []meta.Slice // copy of the list it was built from
	painted []meta.Slice // meta.Resolve(src, 0, meta.Extent(src))
}

// find returns the painting of list for chunk index if it is kept. The
// result is shared and must not be modified.
func (p *paintings) find(index uint32, list []meta.Slice) ([]meta.Slice, bool) {
	for i := range p.entries {
		e := &p.entries[i]
		if e.valid && e.index == index && slices.Equal(e.src, list) {
			return e.painted, true
		}
	}
	return nil, false
}

// lookup returns the painting of list for chunk index, building it if
// needed. The result is shared and must not be modified.
func (p *paintings) lookup(index uint32, list []meta.Slice) []meta.Slice {
	if painted, ok := p.find(index, list); ok {
		return painted
	}
	e := &p.entries[p.next]
	p.next = (p.next + 1) % len(p.entries)
	*e = painting{
		valid:   true,
		index:   index,
		src:     slices.Clone(list),
		painted: meta.Resolve(list, 0, meta.Extent(list)),
	}
	return e.painted
}

// window returns the pieces of a whole-chunk painting visible in
// [pos, pos+n), as meta.Resolve(list, pos, n) would: consecutive pieces
// covering the window exactly, holes (ID 0) where nothing was written.
func window(painted []meta.Slice, pos, n uint32) []meta.Slice {
	end := pos + n
	i := sort.Search(len(painted), func(i int) bool {
		return painted[i].Pos+painted[i].Len > pos
	})
	out := make([]meta.Slice, 0, 4)
	at := pos
	for ; i < len(painted) && at < end; i++ {
		p := painted[i]
		if p.Pos > at { // painted pieces are contiguous; defensive
			out = append(out, meta.Slice{Pos: at, Len: min(p.Pos, end) - at})
			at = min(p.Pos, end)
			if at == end {
				break
			}
		}
		out = append(out, narrow(p, at, min(p.Pos+p.Len, end)))
		at = min(p.Pos+p.Len, end)
	}
	if at < end {
		out = append(out, meta.Slice{Pos: at, Len: end - at})
	}
	return out
}

// narrow cuts piece p to the chunk range [from, to) inside it.
func narrow(p meta.Slice, from, to uint32) meta.Slice {
	if p.ID != 0 {
		p.Off += from - p.Pos
	}
	p.Pos, p.Len = from, to-from
	return p
}
