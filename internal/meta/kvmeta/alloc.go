package kvmeta

import (
	"cmp"
	"slices"
	"sort"

	"shoal/internal/meta"
)

// Allocated bytes (meta.Attr.Alloc, reported as st_blocks) are the bytes
// of a file that show data rather than holes. They are kept exactly, as a
// running count in the attr record: every change of a chunk's slice list
// adds the difference of the chunk's visible data before and after
// (WriteChunk, CopyFileRange, punch, truncate, and compaction, which
// writes short holes out as zeros).
//
// Rejected: summing the chunks at Getattr (a stat of a 20 GiB image would
// read 320 chunk lists) and an upper bound from slice lengths (overwrites
// would count twice, and du is what users check after a discard).

// visibleBytes is how many bytes of a chunk its slice list shows as data.
func visibleBytes(ss []meta.Slice) uint64 {
	return dataBytes(meta.Resolve(ss, 0, meta.ChunkSize))
}

// appendedAlloc is the change of a chunk's visible data when s is appended
// to ss: only s's window changes, to all data (or, for a hole, none). One
// painting of the window instead of two of the whole chunk.
func appendedAlloc(ss []meta.Slice, s meta.Slice) int64 {
	var before int64
	for _, p := range meta.Resolve(ss, s.Pos, s.Len) {
		if p.ID != 0 {
			before += int64(p.Len)
		}
	}
	if s.ID == 0 {
		return -before
	}
	return int64(s.Len) - before
}

// paintMin is the list length from which a commit counts allocated bytes
// on a painting of the chunk (computed once, then kept with the list in
// the chunk cache and updated by each commit) rather than with one scan
// of the list per record.
const paintMin = 64

// addedAlloc returns the change of a chunk's visible data when the last m
// records of list were appended to the ones before, and the painting of
// the new list when it computed one (nil otherwise).
func (t *txn) addedAlloc(ref chunkRef, list []meta.Slice, m int) (int64, *painting) {
	k := len(list) - m
	p, ok := t.paintings[ref]
	if !ok {
		if k < paintMin || t.cache == nil {
			var d int64
			for i := k; i < len(list); i++ {
				d += appendedAlloc(list[:i], list[i])
			}
			return d, nil
		}
		p = newPainting(meta.Resolve(list[:k], 0, meta.ChunkSize))
	}
	painted, d := p.paint(list[k:])
	return d, painted
}

// paintAdded paints added (in order) over p, consecutive pieces of a
// chunk's painting that cover every record of added (a whole chunk's, or
// the blocks painting.paint joined), and returns the new pieces and the
// change of their data bytes. Only the
// pieces under the records change: each run of them is repainted with the
// records over it, so a commit of m records costs O(m log k) besides one
// copy of the k pieces.
func paintAdded(p, added []meta.Slice) ([]meta.Slice, int64) {
	type run struct{ i, j int } // pieces p[i:j]
	var runs []run
	for _, w := range windows(added) {
		i := sort.Search(len(p), func(x int) bool { return p[x].Pos+p[x].Len > w.Pos })
		j := sort.Search(len(p), func(x int) bool { return p[x].Pos >= w.Pos+w.Len })
		if n := len(runs); n > 0 && i < runs[n-1].j {
			runs[n-1].j = max(runs[n-1].j, j)
			continue
		}
		runs = append(runs, run{i, j})
	}
	out := make([]meta.Slice, 0, len(p)+2*len(added)+2)
	var delta int64
	at := 0
	for _, r := range runs {
		out = append(out, p[at:r.i]...)
		span := p[r.i:r.j]
		lo, hi := span[0].Pos, span[len(span)-1].Pos+span[len(span)-1].Len
		list := slices.Clone(span)
		for _, s := range added {
			if s.Pos < hi && s.Pos+s.Len > lo {
				list = append(list, s)
			}
		}
		np := meta.Resolve(list, lo, hi-lo)
		delta += int64(dataBytes(np)) - int64(dataBytes(span))
		out = append(out, np...)
		at = r.j
	}
	return append(out, p[at:]...), delta
}

// dataBytes sums the lengths of the data pieces (ID not 0).
func dataBytes(pieces []meta.Slice) uint64 {
	var n uint64
	for _, p := range pieces {
		if p.ID != 0 {
			n += uint64(p.Len)
		}
	}
	return n
}

// windows returns the chunk ranges the records of ss cover, merged, in
// position order (only Pos and Len set).
func windows(ss []meta.Slice) []meta.Slice {
	w := make([]meta.Slice, 0, len(ss))
	for _, s := range ss {
		w = append(w, meta.Slice{Pos: s.Pos, Len: s.Len})
	}
	slices.SortFunc(w, func(a, b meta.Slice) int { return cmp.Compare(a.Pos, b.Pos) })
	out := w[:1]
	for _, s := range w[1:] {
		last := &out[len(out)-1]
		if s.Pos <= last.Pos+last.Len {
			last.Len = max(last.Len, s.Pos+s.Len-last.Pos)
			continue
		}
		out = append(out, s)
	}
	return out
}

// setChunkAlloc replaces a chunk's list old with ss, adjusting ino's
// allocated bytes.
func (t *txn) setChunkAlloc(ino meta.Ino, index uint32, old, ss []meta.Slice) error {
	before := visibleBytes(old)
	if err := t.setChunk(ino, index, ss); err != nil {
		return err
	}
	return t.adjustAlloc(ino, int64(visibleBytes(ss))-int64(before))
}

// adjustAlloc adds delta to ino's allocated bytes (never below zero: a
// record from before the count was kept starts from the length).
func (t *txn) adjustAlloc(ino meta.Ino, delta int64) error {
	if delta == 0 {
		return nil
	}
	a, err := t.attr(ino)
	if err != nil {
		return err
	}
	a.Alloc = uint64(max(0, int64(a.Alloc)+delta))
	t.touch(ino)
	return nil
}
