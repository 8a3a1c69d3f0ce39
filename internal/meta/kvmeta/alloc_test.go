package kvmeta

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"shoal/internal/meta"
)

const mib = 1 << 20

// TestAllocCounts follows the allocated bytes of a sparse file through
// writes, overwrites, punch, zero range, copy and truncate.
func TestAllocCounts(t *testing.T) {
	e, _, ctx := newTestEngine(t)
	f := mkfile(t, e, ctx, "img")
	g := mkfile(t, e, ctx, "copy")
	steps := []struct {
		name string
		op   func() error
		ino  meta.Ino
		want uint64
	}{
		{"truncate to 20 GiB", func() error { _, err := e.Truncate(ctx, f, 20<<30); return err }, f, 0},
		{"write 4 MiB", func() error { return write(e, ctx, f, 1, 150*meta.ChunkSize+10, 4*mib) }, f, 4 * mib},
		{"overwrite 1 MiB of it", func() error { return write(e, ctx, f, 2, 150*meta.ChunkSize+10, mib) }, f, 4 * mib},
		{"write across a chunk end", func() error { return write(e, ctx, f, 3, 3*meta.ChunkSize-mib, 2*mib) }, f, 6 * mib},
		{"punch 1 MiB", func() error {
			_, err := e.Fallocate(ctx, f, fallocPunchHole|fallocKeepSize, 150*meta.ChunkSize+10, mib)
			return err
		}, f, 5 * mib},
		{"zero range over the chunk end", func() error {
			_, err := e.Fallocate(ctx, f, fallocZeroRange, 3*meta.ChunkSize-mib/2, mib)
			return err
		}, f, 4 * mib},
		{"copy the whole file", func() error {
			_, err := e.CopyFileRange(ctx, meta.CopyRequest{SrcIno: f, DstIno: g, Len: 20 << 30})
			return err
		}, g, 4 * mib},
		{"the source is unchanged", func() error { return nil }, f, 4 * mib},
		{"truncate the copy into its data", func() error { _, err := e.Truncate(ctx, g, 150*meta.ChunkSize+10+2*mib); return err }, g, 2 * mib},
		{"truncate to zero", func() error { _, err := e.Truncate(ctx, f, 0); return err }, f, 0},
	}
	for _, s := range steps {
		if err := s.op(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		a, err := e.Getattr(ctx, s.ino)
		if err != nil {
			t.Fatal(err)
		}
		if a.Alloc != s.want {
			t.Errorf("%s: Alloc = %d, want %d", s.name, a.Alloc, s.want)
		}
		if full := recount(t, e, ctx, s.ino); a.Alloc != full {
			t.Errorf("%s: Alloc = %d, but the chunks show %d", s.name, a.Alloc, full)
		}
	}
}

// TestAllocRandom checks the running count against a recount of the
// chunks after random writes, punches, truncates and copies.
func TestAllocRandom(t *testing.T) {
	e, _, ctx := newTestEngine(t)
	files := []meta.Ino{mkfile(t, e, ctx, "a"), mkfile(t, e, ctx, "b")}
	r := rand.New(rand.NewPCG(1, 2))
	const span = 3 * meta.ChunkSize
	for i := range 400 {
		ino := files[r.IntN(2)]
		off, n := uint64(r.IntN(span)), uint64(1+r.IntN(8*mib))
		var err error
		switch r.IntN(5) {
		case 0, 1:
			err = write(e, ctx, ino, meta.SliceID(i+1), off, n)
		case 2:
			_, err = e.Fallocate(ctx, ino, fallocPunchHole|fallocKeepSize, off, n)
		case 3:
			_, err = e.Truncate(ctx, ino, off)
		case 4:
			_, err = e.CopyFileRange(ctx, meta.CopyRequest{SrcIno: files[0], SrcOff: off, DstIno: files[1], DstOff: uint64(r.IntN(span)), Len: n})
		}
		if err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
		for _, f := range files {
			a, err := e.Getattr(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if full := recount(t, e, ctx, f); a.Alloc != full {
				t.Fatalf("op %d: inode %d Alloc = %d, chunks show %d", i, f, a.Alloc, full)
			}
		}
	}
}

// TestAllocOldRecord: an attr record from before Alloc was kept decodes as
// fully allocated, and a new record keeps the count.
func TestAllocOldRecord(t *testing.T) {
	a := meta.Attr{Type: meta.TypeFile, Mode: 0o644, Length: 5 * mib, Alloc: mib}
	b := encodeAttrRecord(&a, flagXattrs, 0)
	got, err := decodeAttr(b)
	if err != nil || got != a || attrFlags(b) != flagXattrs || attrGen(b) != 0 {
		t.Fatalf("round trip: %+v, %v, flags %d", got, err, attrFlags(b))
	}
	// A version 2 record carries the chunk generation after Alloc; an
	// older decoder reads the rest as before.
	g := encodeAttrRecord(&a, flagXattrs, 77)
	if got, err := decodeAttr(g); err != nil || got != a || attrGen(g) != 77 || len(g) != attrLen+16 {
		t.Fatalf("with generation: %+v, %v, gen %d, %d bytes", got, err, attrGen(g), len(g))
	}
	old, err := decodeAttr(b[:attrLen])
	if err != nil || old.Alloc != old.Length || attrFlags(b[:attrLen]) != flagXattrs {
		t.Fatalf("old record: %+v, %v", old, err)
	}
}

func mkfile(t *testing.T, e *Engine, ctx context.Context, name string) meta.Ino {
	t.Helper()
	ent, err := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: name, Type: meta.TypeFile})
	if err != nil {
		t.Fatal(err)
	}
	return ent.Ino
}

// write commits one slice per chunk the range [off, off+n) touches.
func write(e *Engine, ctx context.Context, ino meta.Ino, id meta.SliceID, off, n uint64) error {
	var sliceOff uint32
	for n > 0 {
		index, pos := uint32(off/meta.ChunkSize), uint32(off%meta.ChunkSize)
		l := uint32(min(n, meta.ChunkSize-uint64(pos)))
		s := meta.Slice{ID: id, Size: uint32(min(n, meta.ChunkSize)), Off: sliceOff, Pos: pos, Len: l}
		s.Size = max(s.Size, s.Off+s.Len)
		if _, err := e.WriteChunk(ctx, ino, index, s); err != nil {
			return err
		}
		off, n, sliceOff = off+uint64(l), n-uint64(l), sliceOff+l
	}
	return nil
}

// recount sums the visible data of every chunk of ino.
func recount(t *testing.T, e *Engine, ctx context.Context, ino meta.Ino) uint64 {
	t.Helper()
	a, err := e.Getattr(ctx, ino)
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for index := uint32(0); uint64(index)*meta.ChunkSize < a.Length; index++ {
		ss, err := e.ReadChunk(ctx, ino, index)
		if err != nil {
			t.Fatal(err)
		}
		n += visibleBytes(ss)
	}
	return n
}

// TestAddedAllocMatchesRecount: both ways a commit counts allocated bytes
// (a scan per record; a painting updated by paintAdded) agree with the
// visible bytes of the chunk recounted before and after, and the updated
// painting shows what painting the whole new list shows, for random lists
// of data and hole records, small and large, overlapping and not.
func TestAddedAllocMatchesRecount(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	span := func() uint32 {
		if r.IntN(4) == 0 {
			return meta.ChunkSize
		}
		return 1 << 20
	}
	record := func(limit uint32) meta.Slice {
		n := uint32(1 + r.IntN(64<<10))
		if r.IntN(8) == 0 {
			n = uint32(1 + r.IntN(8<<20))
		}
		n = min(n, limit)
		s := meta.Slice{ID: meta.SliceID(1 + r.IntN(1000)), Size: n, Len: n, Pos: uint32(r.Int64N(int64(limit - n + 1)))}
		if r.IntN(6) == 0 {
			s.ID, s.Size = 0, 0 // a hole (punch)
		}
		return s
	}
	for i := range 2000 {
		limit := span()
		var ss, added []meta.Slice
		for range r.IntN(300) {
			ss = append(ss, record(limit))
		}
		for range 1 + r.IntN(40) {
			added = append(added, record(limit))
		}
		all := append(slices.Clone(ss), added...)
		want := int64(visibleBytes(all)) - int64(visibleBytes(ss))
		var scans int64
		for j := len(ss); j < len(all); j++ {
			scans += appendedAlloc(all[:j], all[j])
		}
		if scans != want {
			t.Fatalf("case %d: per-record count %d, recount says %d", i, scans, want)
		}
		painted, got := paintAdded(meta.Resolve(ss, 0, meta.ChunkSize), added)
		if got != want {
			t.Fatalf("case %d: paintAdded counts %d, recount says %d\nss %v\nadded %v", i, got, want, ss, added)
		}
		if p, q := normalize(painted), normalize(meta.Resolve(all, 0, meta.ChunkSize)); !slices.Equal(p, q) {
			t.Fatalf("case %d: painting after paintAdded\n%v\nbut painting the list gives\n%v", i, p, q)
		}
		// The same on a painting in blocks, whose blocks the update shares
		// and must leave as they were.
		before := newPainting(meta.Resolve(ss, 0, meta.ChunkSize))
		flatBefore := flat(before)
		after, got := before.paint(added)
		if got != want {
			t.Fatalf("case %d: painting.paint counts %d, recount says %d", i, got, want)
		}
		if p, q := normalize(flat(after)), normalize(meta.Resolve(all, 0, meta.ChunkSize)); !slices.Equal(p, q) {
			t.Fatalf("case %d: painting in blocks after paint\n%v\nbut painting the list gives\n%v", i, p, q)
		}
		if !slices.Equal(flat(before), flatBefore) {
			t.Fatalf("case %d: paint changed the painting it started from", i)
		}
		for _, b := range after.blocks {
			if len(b) == 0 || len(b) > paintBlock {
				t.Fatalf("case %d: a block of %d pieces", i, len(b))
			}
		}
		if after.size() != len(flat(after)) {
			t.Fatalf("case %d: size %d, %d pieces", i, after.size(), len(flat(after)))
		}
	}
}

// flat returns a painting's pieces as one array.
func flat(p *painting) []meta.Slice {
	var out []meta.Slice
	for _, b := range p.blocks {
		out = append(out, b...)
	}
	return out
}

// TestPaintingBlocksShared: a commit of one small record to a long
// painting rebuilds at most two blocks and shares the others.
func TestPaintingBlocksShared(t *testing.T) {
	var ss []meta.Slice
	for i := range uint32(2000) {
		ss = append(ss, meta.Slice{ID: meta.SliceID(1 + i), Size: 4096, Len: 4096, Pos: i * 8192})
	}
	p := newPainting(meta.Resolve(ss, 0, meta.ChunkSize))
	q, d := p.paint([]meta.Slice{{ID: 9999, Size: 100, Len: 100, Pos: 1000 * 8192}})
	if d != 0 {
		t.Fatalf("overwriting data inside data changed the count by %d", d)
	}
	shared := 0
	for _, b := range q.blocks {
		for _, o := range p.blocks {
			if &b[0] == &o[0] {
				shared++
				break
			}
		}
	}
	if shared < len(p.blocks)-2 {
		t.Fatalf("%d of %d blocks shared after a one-record commit", shared, len(p.blocks))
	}
}

// normalize merges the adjacent pieces of a painting that continue each
// other (same slice, contiguous offsets; or both holes), so that two
// paintings of the same content compare equal however they were cut.
func normalize(p []meta.Slice) []meta.Slice {
	var out []meta.Slice
	for _, s := range p {
		if n := len(out); n > 0 {
			l := &out[n-1]
			if l.ID == s.ID && (s.ID == 0 || l.Size == s.Size && l.Off+l.Len == s.Off) && l.Pos+l.Len == s.Pos {
				l.Len += s.Len
				continue
			}
		}
		if s.ID == 0 {
			s.Size, s.Off = 0, 0
		}
		out = append(out, s)
	}
	return out
}
