package kvmeta

import (
	"context"
	"syscall"

	"shoal/internal/meta"
)

// Fallocate mode bits, as fallocate(2).
const (
	fallocKeepSize  = 0x01
	fallocPunchHole = 0x02
	fallocZeroRange = 0x10
)

// noEnd is an open end for punch: everything past off.
const noEnd = ^uint64(0)

// maxFileSize is the largest offset a chunk index can address.
const maxFileSize = uint64(1<<32) * meta.ChunkSize

// Truncate sets the length. Shrinking hides the data past the new end: whole
// chunks past it are deleted (their slices released), and the cut part of
// the boundary chunk is covered by a hole slice, so that a later extension
// reads zeros. Growing needs no slices, because nothing is visible past the
// length.
func (e *Engine) Truncate(ctx context.Context, ino meta.Ino, length uint64) (meta.Attr, error) {
	var out meta.Attr
	if length > maxFileSize {
		return out, syscall.EFBIG
	}
	err := e.update(ctx, func(t *txn) error {
		a, err := t.file(ino)
		if err != nil {
			return err
		}
		if length < a.Length {
			if err := t.punch(ino, length, noEnd); err != nil {
				return err
			}
		}
		t.setLength(a, length)
		t.modified(a)
		t.touch(ino)
		out = *a
		return nil
	})
	return out, wrap(err, "truncate %d to %d", ino, length)
}

// Fallocate reserves nothing (objects are written on demand); mode 0 grows
// the length, KEEP_SIZE changes nothing, PUNCH_HOLE|KEEP_SIZE and
// ZERO_RANGE cover the range with holes. EINVAL for length 0, EFBIG past
// the largest file, EOPNOTSUPP for other modes.
func (e *Engine) Fallocate(ctx context.Context, ino meta.Ino, mode uint32, off, length uint64) (meta.Attr, error) {
	var out meta.Attr
	switch {
	case length == 0:
		return out, syscall.EINVAL
	case off+length < off || off+length > maxFileSize:
		return out, syscall.EFBIG
	}
	err := e.update(ctx, func(t *txn) error {
		a, err := t.file(ino)
		if err != nil {
			return err
		}
		if err := t.fallocate(ino, a, mode, off, off+length); err != nil {
			return err
		}
		out = *a
		return nil
	})
	return out, wrap(err, "fallocate %d mode %#x %d+%d", ino, mode, off, length)
}

func (t *txn) fallocate(ino meta.Ino, a *meta.Attr, mode uint32, off, end uint64) error {
	grow := mode&fallocKeepSize == 0 && end > a.Length
	switch mode {
	case 0, fallocKeepSize:
		if !grow {
			return nil
		}
	case fallocPunchHole | fallocKeepSize, fallocZeroRange, fallocZeroRange | fallocKeepSize:
		if off < a.Length {
			if err := t.punch(ino, off, min(end, a.Length)); err != nil {
				return err
			}
		}
	default:
		return syscall.EOPNOTSUPP
	}
	if grow {
		t.setLength(a, end)
	}
	t.modified(a)
	t.touch(ino)
	return nil
}

// punch makes [off, end) read as zeros. Chunks wholly inside the range are
// deleted; a partly covered chunk loses the records wholly inside the range
// and gets a hole record over it if anything else still shows there.
func (t *txn) punch(ino meta.Ino, off, end uint64) error {
	first := uint32(off / meta.ChunkSize)
	if p := uint32(off % meta.ChunkSize); p != 0 || end-off < meta.ChunkSize {
		chunkEnd := min(end, uint64(first+1)*meta.ChunkSize)
		if err := t.punchChunk(ino, first, p, uint32(chunkEnd-uint64(first)*meta.ChunkSize)); err != nil {
			return err
		}
		if chunkEnd == end {
			return nil
		}
		first++
	}
	last := uint64(end / meta.ChunkSize) // first chunk not wholly covered
	if end == noEnd {
		last = noEnd
	}
	var freed uint64
	err := t.deleteChunksCounting(ino, first, last, func(ss []meta.Slice) { freed += visibleBytes(ss) })
	if err == nil {
		err = t.adjustAlloc(ino, -int64(freed))
	}
	if err != nil || end == noEnd {
		return err
	}
	if p := uint32(end % meta.ChunkSize); p != 0 {
		return t.punchChunk(ino, uint32(last), 0, p)
	}
	return nil
}

// punchChunk hides chunk positions [from, to) of one chunk.
func (t *txn) punchChunk(ino meta.Ino, index uint32, from, to uint32) error {
	ss, err := t.chunk(ino, index)
	if err != nil || len(ss) == 0 {
		return err
	}
	kept, dropped := ss[:0:0], ss[:0:0]
	visible := false
	for _, s := range ss {
		switch {
		case s.Pos >= from && s.Pos+s.Len <= to:
			dropped = append(dropped, s)
		case s.Pos < to && s.Pos+s.Len > from:
			kept = append(kept, s)
			visible = true
		default:
			kept = append(kept, s)
		}
	}
	if visible {
		kept = append(kept, meta.Slice{Pos: from, Len: to - from})
	}
	if onlyHoles(kept) {
		kept = nil
	}
	if err := t.setChunkAlloc(ino, index, ss, kept); err != nil {
		return err
	}
	return t.release(dropped)
}

// onlyHoles reports whether a list shows nothing but zeros.
func onlyHoles(ss []meta.Slice) bool {
	for _, s := range ss {
		if s.ID != 0 {
			return false
		}
	}
	return true
}
