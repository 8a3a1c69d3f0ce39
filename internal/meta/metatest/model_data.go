package metatest

import (
	"pgregory.net/rapid"

	"shoal/internal/meta"
)

// File data in the model is sparse: a length and the labels of the bytes
// that are not zero. Offsets are drawn from two windows, one at the start
// of the file and one straddling the first chunk boundary, so writes,
// truncation, hole punching and copies all cross chunk boundaries.

// modelWindows are the file ranges checked after each step; every drawn
// offset plus length stays inside them.
var modelWindows = [][2]uint64{{0, 10000}, {meta.ChunkSize - 10000, meta.ChunkSize + 10000}}

func drawOffset(rt *rapid.T, label string) uint64 {
	base := rapid.SampledFrom([]uint64{0, meta.ChunkSize - 4000}).Draw(rt, label+"Base")
	return base + uint64(rapid.IntRange(0, 4000).Draw(rt, label))
}

func (n *mnode) setLabel(off uint64, label uint64) {
	if n.labels == nil {
		n.labels = map[uint64]uint64{}
	}
	if label == 0 {
		delete(n.labels, off)
	} else {
		n.labels[off] = label
	}
}

// zero clears the labels of [from, to).
func (n *mnode) zero(from, to uint64) {
	for off := range n.labels {
		if off >= from && off < to {
			delete(n.labels, off)
		}
	}
}

func (m *modelRun) write(rt *rapid.T) {
	f := m.drawFile(rt, "file")
	off := drawOffset(rt, "off")
	n := uint64(rapid.IntRange(1, 1000).Draw(rt, "len"))
	for end := off + n; off < end; { // one slice per chunk, as the data layer does
		piece := min(end-off, meta.ChunkSize-off%meta.ChunkSize)
		id, err := m.v.e.NewSliceID(m.v.ctx)
		if err != nil {
			rt.Fatalf("new slice id: %v", err)
		}
		s := meta.Slice{ID: id, Size: uint32(piece), Len: uint32(piece), Pos: uint32(off % meta.ChunkSize)}
		if _, err := m.v.e.WriteChunk(m.v.ctx, f.ino, uint32(off/meta.ChunkSize), s); err != nil {
			rt.Fatalf("write chunk: %v", err)
		}
		for i := range piece {
			f.setLabel(off+i, uint64(id)<<32|i)
		}
		off += piece
	}
	f.length = max(f.length, off)
}

func (m *modelRun) truncate(rt *rapid.T) {
	f := m.drawFile(rt, "file")
	n := drawOffset(rt, "len")
	if _, err := m.v.e.Truncate(m.v.ctx, f.ino, n); err != nil {
		rt.Fatalf("truncate: %v", err)
	}
	f.zero(n, ^uint64(0))
	f.length = n
}

func (m *modelRun) punch(rt *rapid.T) {
	f := m.drawFile(rt, "file")
	off := drawOffset(rt, "off")
	n := uint64(rapid.IntRange(1, 2000).Draw(rt, "len"))
	mode := rapid.SampledFrom([]uint32{fallocPunchHole | fallocKeepSize, fallocZeroRange}).Draw(rt, "mode")
	if _, err := m.v.e.Fallocate(m.v.ctx, f.ino, mode, off, n); err != nil {
		rt.Fatalf("fallocate: %v", err)
	}
	f.zero(off, off+n)
	if mode == fallocZeroRange {
		f.length = max(f.length, off+n)
	}
}

func (m *modelRun) copyRange(rt *rapid.T) {
	src, dst := m.drawFile(rt, "src"), m.drawFile(rt, "dst")
	so, do := drawOffset(rt, "srcOff"), drawOffset(rt, "dstOff")
	n := uint64(rapid.IntRange(1, 2000).Draw(rt, "len"))
	got, err := m.v.e.CopyFileRange(m.v.ctx, meta.CopyRequest{SrcIno: src.ino, SrcOff: so, DstIno: dst.ino, DstOff: do, Len: n})
	if err != nil {
		rt.Fatalf("copy: %v", err)
	}
	var want uint64
	if so < src.length {
		want = min(n, src.length-so)
	}
	if got != want {
		rt.Fatalf("copied %d, model %d", got, want)
	}
	buf := make([]uint64, want) // through a buffer: overlapping copies are fine
	for i := range want {
		buf[i] = src.labels[so+i]
	}
	for i, label := range buf {
		dst.setLabel(do+uint64(i), label)
	}
	if want > 0 {
		dst.length = max(dst.length, do+want)
	}
}

// checkData compares a file's length, its allocated bytes (the data bytes
// that are not holes) and the bytes of both windows.
func (m *modelRun) checkData(rt *rapid.T, n *mnode, a meta.Attr) {
	if a.Length != n.length {
		rt.Fatalf("file %d: length %d, model %d", n.ino, a.Length, n.length)
	}
	if a.Alloc != uint64(len(n.labels)) {
		rt.Fatalf("file %d: %d bytes allocated, model %d", n.ino, a.Alloc, len(n.labels))
	}
	chunks := map[uint32][]meta.Slice{}
	for _, w := range modelWindows {
		for off := w[0]; off < min(w[1], n.length); {
			index := uint32(off / meta.ChunkSize)
			ss, ok := chunks[index]
			if !ok {
				var err error
				if ss, err = m.v.e.ReadChunk(m.v.ctx, n.ino, index); err != nil {
					rt.Fatalf("read chunk %d/%d: %v", n.ino, index, err)
				}
				chunks[index] = ss
			}
			end := min(w[1], n.length, uint64(index+1)*meta.ChunkSize)
			base := uint64(index) * meta.ChunkSize
			m.checkPieces(rt, n, base, meta.Resolve(ss, uint32(off-base), uint32(end-off)), ss)
			off = end
		}
	}
}

func (m *modelRun) checkPieces(rt *rapid.T, n *mnode, base uint64, pieces, ss []meta.Slice) {
	for _, p := range pieces {
		for i := range p.Len {
			var label uint64
			if p.ID != 0 {
				label = uint64(p.ID)<<32 | uint64(p.Off+i)
			}
			at := base + uint64(p.Pos+i)
			if want := n.labels[at]; want != label {
				rt.Fatalf("file %d byte %d: engine %#x, model %#x (slices %v)", n.ino, at, label, want, ss)
			}
		}
	}
}
