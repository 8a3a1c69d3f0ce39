package kvmeta

import (
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
