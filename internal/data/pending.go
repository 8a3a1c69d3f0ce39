package data

import (
	"context"

	"shoal/internal/meta"
)

// Pending is a snapshot of a Writer's uncommitted bytes in one range of a
// chunk, to paint over data read from the committed slice list: it lets a
// reader see its own mount's writes without flushing them first.
//
// Protocol (the order matters): take the snapshot with Writer.Pending,
// then get the chunk's committed slice list, read it with Reader.Read,
// and Apply the snapshot to the same buffer. A slice missing from the
// snapshot was committed before it was taken, so the list fetched
// afterwards has it (provided the CommitFunc invalidates any list cache
// before returning); a slice in both is painted twice, harmlessly, newest
// last.
type Pending struct {
	pos    uint32
	pieces []pendingPiece
}

// pendingPiece is one visible range of uncommitted data: bytes copied from
// the write buffer, or (for blocks already stored and released from the
// buffer) a slice range to read from the store.
type pendingPiece struct {
	pos    uint32
	data   []byte     // when buffered
	stored meta.Slice // when data is nil
}

// Pending snapshots w's uncommitted writes to chunk index within
// [pos, pos+n). It is cheap when there are none.
func (w *Writer) Pending(index, pos uint32, n int) *Pending {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := &Pending{pos: pos}
	list := w.chunks[index]
	if len(list) == 0 || n <= 0 {
		return p
	}
	painted := make([]meta.Slice, len(list))
	for i, s := range list { // ID i+1 names list[i] while resolving
		painted[i] = meta.Slice{ID: meta.SliceID(i + 1), Size: s.length, Len: s.length, Pos: s.pos}
	}
	for _, v := range meta.Resolve(painted, pos, uint32(n)) {
		if v.ID != 0 {
			w.snapshot(p, list[v.ID-1], v)
		}
	}
	return p
}

// snapshot adds the visible piece v of slice s to p, block by block.
// Called with w.mu held.
func (w *Writer) snapshot(p *Pending, s *slice, v meta.Slice) {
	bs, ps := w.s.cfg.BlockSize, w.s.pageSize
	off, at := int(v.Off), v.Pos
	for end := int(v.Off + v.Len); off < end; {
		bi := off / bs
		n := min(end-off, (bi+1)*bs-off)
		b := s.blocks[bi]
		if b.pages == nil { // stored; the id is set and the size final
			s.idMu.Lock()
			id := s.id
			s.idMu.Unlock()
			size, base := s.object()
			p.pieces = append(p.pieces, pendingPiece{pos: at,
				stored: meta.Slice{ID: id, Size: size, Off: base + uint32(off), Len: uint32(n), Pos: at}})
		} else {
			data := make([]byte, n)
			for c := 0; c < n; {
				within := off + c - bi*bs
				page := b.pages[within/ps]
				c += copy(data[c:], page[within%ps:min(ps, bs-within/ps*ps)])
			}
			p.pieces = append(p.pieces, pendingPiece{pos: at, data: data})
		}
		off += n
		at += uint32(n)
	}
}

// Empty reports whether the snapshot holds no uncommitted bytes.
func (p *Pending) Empty() bool { return len(p.pieces) == 0 }

// Apply paints the snapshot over buf, which holds the chunk's bytes from
// the position given to Writer.Pending. Stored pieces are read through r;
// their errors are reported as Reader.Read's are.
func (p *Pending) Apply(ctx context.Context, r *Reader, index uint32, buf []byte) error {
	for _, pc := range p.pieces {
		dst := buf[pc.pos-p.pos:]
		if pc.data != nil {
			copy(dst, pc.data)
			continue
		}
		if err := r.readPiece(ctx, index, pc.stored, dst[:pc.stored.Len], false); err != nil {
			return err
		}
	}
	return nil
}

// ListFunc returns the committed slice list of a chunk (the engine's
// ReadChunk, or a cache of it that commits invalidate).
type ListFunc func(ctx context.Context, index uint32) ([]meta.Slice, error)

// ReadThrough is Read including w's uncommitted writes, in the order the
// Pending protocol needs: snapshot w, then list the chunk, read, paint. w
// may be nil (no writer: a plain Read of the listed slices).
func (r *Reader) ReadThrough(ctx context.Context, w *Writer, index uint32, list ListFunc, pos uint32, buf []byte) (int, error) {
	var p *Pending
	if w != nil {
		p = w.Pending(index, pos, len(buf))
	}
	slices, err := list(ctx, index)
	if err != nil {
		return 0, err
	}
	n, err := r.Read(ctx, index, slices, pos, buf)
	if err != nil || p == nil {
		return n, err
	}
	if err := p.Apply(ctx, r, index, buf[:n]); err != nil {
		return 0, err
	}
	return n, nil
}
