package kvmeta

import (
	"context"
	"slices"
	"syscall"

	"shoal/internal/meta"
)

// span is a visible piece of a file: slice data (or a hole, ID 0) at file
// offset off, s.Len bytes long. s.Pos is not used.
type span struct {
	off uint64
	s   meta.Slice
}

// CopyFileRange clones by reference. The source range is resolved to its
// visible pieces (meta.Resolve) before anything is written, so a copy
// within one file behaves like a copy through a buffer even when the ranges
// overlap. Each piece is split at destination chunk boundaries and
// appended to the destination chunks; every appended record takes a
// reference on its slice. Holes are copied as hole records where the
// destination could show data.
func (e *Engine) CopyFileRange(ctx context.Context, req meta.CopyRequest) (uint64, error) {
	if req.SrcOff+req.Len < req.SrcOff || req.DstOff+req.Len < req.DstOff {
		return 0, syscall.EINVAL
	}
	var copied uint64
	err := e.update(ctx, func(t *txn) error {
		var err error
		copied, err = t.copyRange(req)
		return err
	})
	if err != nil {
		return 0, wrap(err, "copy %d@%d to %d@%d len %d", req.SrcIno, req.SrcOff, req.DstIno, req.DstOff, req.Len)
	}
	return copied, nil
}

func (t *txn) copyRange(req meta.CopyRequest) (uint64, error) {
	src, err := t.file(req.SrcIno)
	if err != nil {
		return 0, err
	}
	dst, err := t.file(req.DstIno)
	if err != nil {
		return 0, err
	}
	if req.SrcOff >= src.Length || req.Len == 0 {
		return 0, nil
	}
	n := min(req.Len, src.Length-req.SrcOff)
	if req.DstOff+n > maxFileSize {
		return 0, syscall.EFBIG
	}
	spans, err := t.readSpans(req.SrcIno, req.SrcOff, n)
	if err != nil {
		return 0, err
	}
	if err := t.placeSpans(req.DstIno, dst, spans, int64(req.DstOff)-int64(req.SrcOff)); err != nil {
		return 0, err
	}
	if slices.ContainsFunc(spans, func(s span) bool { return s.s.ID != 0 }) {
		if err := t.countCopy(); err != nil {
			return 0, err
		}
	}
	if end := req.DstOff + n; end > dst.Length {
		t.setLength(dst, end)
	}
	t.modified(dst)
	t.touch(req.DstIno)
	return n, nil
}

// readSpans resolves the visible pieces of [off, off+n) of ino.
func (t *txn) readSpans(ino meta.Ino, off, n uint64) ([]span, error) {
	var out []span
	for end := off + n; off < end; {
		index := uint32(off / meta.ChunkSize)
		base := uint64(index) * meta.ChunkSize
		pos := uint32(off - base)
		length := uint32(min(end-off, meta.ChunkSize-uint64(pos)))
		ss, err := t.chunk(ino, index)
		if err != nil {
			return nil, err
		}
		for _, s := range meta.Resolve(ss, pos, length) {
			out = append(out, span{off: base + uint64(s.Pos), s: s})
		}
		off += uint64(length)
	}
	return out, nil
}

// placeSpans appends spans, shifted by delta, to ino's chunks, splitting at
// chunk boundaries, and takes a reference for each slice record added.
func (t *txn) placeSpans(ino meta.Ino, a *meta.Attr, spans []span, delta int64) error {
	added := make(map[uint32][]meta.Slice)
	refs := make(map[meta.SliceID]int64)
	for _, sp := range spans {
		at := uint64(int64(sp.off) + delta)
		if sp.s.ID == 0 && at >= a.Length {
			continue // nothing shows there to hide
		}
		for s := sp.s; s.Len > 0; {
			index := uint32(at / meta.ChunkSize)
			pos := uint32(at % meta.ChunkSize)
			piece := s
			piece.Pos, piece.Len = pos, min(s.Len, uint32(meta.ChunkSize-uint64(pos)))
			added[index] = append(added[index], piece)
			if s.ID != 0 {
				refs[s.ID]++
				s.Off += piece.Len
			}
			s.Len -= piece.Len
			at += uint64(piece.Len)
		}
	}
	for _, index := range sortedKeys(added) {
		ss, err := t.chunk(ino, index)
		if err != nil {
			return err
		}
		if err := t.setChunkAlloc(ino, index, ss, append(ss, added[index]...)); err != nil {
			return err
		}
	}
	return t.increfAll(refs)
}

func sortedKeys(m map[uint32][]meta.Slice) []uint32 {
	keys := make([]uint32, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
