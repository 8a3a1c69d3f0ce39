package kvmeta

import (
	"slices"
	"sort"

	"shoal/internal/meta"
)

// Allocated bytes (meta.Attr.Alloc, reported as st_blocks) are the bytes
// of a file that show data rather than holes. They are kept exactly, as a
// running count in the attr record: every change of a chunk's slice list
// adds the difference of the chunk's visible data before and after
// (WriteChunk, CopyFileRange, punch, truncate). Compaction leaves what
// is visible unchanged, so it does not touch the count.
//
// Rejected: summing the chunks at Getattr (a stat of a 20 GiB image would
// read 320 chunk lists) and an upper bound from slice lengths (overwrites
// would count twice, and du is what users check after a discard).

// visibleBytes is how many bytes of a chunk its slice list shows as data.
func visibleBytes(ss []meta.Slice) uint64 {
	if len(ss) == 0 {
		return 0
	}
	var n uint64
	for _, p := range meta.Resolve(ss, 0, meta.ChunkSize) {
		if p.ID != 0 {
			n += uint64(p.Len)
		}
	}
	return n
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

// batchAllocMin is the batch size from which addedAlloc paints the span
// of a batch once instead of scanning the list once per record.
const batchAllocMin = 32

// addedAlloc is the change of a chunk's visible data when its last m
// records were appended, in order, to the ones before. Only the windows of
// those records change: the earlier list is painted once over their span
// and the new records are painted over that, so a commit of m records to a
// chunk of k costs about O((k + m) log(k + m)), not the O(m·k) of one
// appendedAlloc per record; small batches, for which those scans are
// cheaper, take one per record.
func addedAlloc(list []meta.Slice, m int) int64 {
	k := len(list) - m
	if m < batchAllocMin {
		var d int64
		for i := k; i < len(list); i++ {
			d += appendedAlloc(list[:i], list[i])
		}
		return d
	}
	ss, added := list[:k], list[k:]
	u := windows(added)
	lo, hi := u[0].Pos, u[len(u)-1].Pos+u[len(u)-1].Len
	before := meta.Resolve(ss, lo, hi-lo)
	after := meta.Resolve(append(slices.Clone(before), added...), lo, hi-lo)
	return int64(dataIn(after, u)) - int64(dataIn(before, u))
}

// windows returns the chunk ranges the records of ss cover, merged, in
// position order (only Pos and Len set).
func windows(ss []meta.Slice) []meta.Slice {
	w := make([]meta.Slice, 0, len(ss))
	for _, s := range ss {
		w = append(w, meta.Slice{Pos: s.Pos, Len: s.Len})
	}
	sort.Slice(w, func(i, j int) bool { return w[i].Pos < w[j].Pos })
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

// dataIn sums the bytes of the data pieces (ID not 0) of a painting that
// fall inside the ranges u (sorted, disjoint).
func dataIn(painted []meta.Slice, u []meta.Slice) uint64 {
	var n uint64
	j := 0
	for _, p := range painted {
		if p.ID == 0 {
			continue
		}
		for j < len(u) && u[j].Pos+u[j].Len <= p.Pos {
			j++
		}
		for k := j; k < len(u) && u[k].Pos < p.Pos+p.Len; k++ {
			lo, hi := max(p.Pos, u[k].Pos), min(p.Pos+p.Len, u[k].Pos+u[k].Len)
			n += uint64(hi - lo)
		}
	}
	return n
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
