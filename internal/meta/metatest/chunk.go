package metatest

import (
	"errors"
	"reflect"
	"syscall"
	"testing"
	"time"

	"shoal/internal/meta"
)

// Fallocate modes, as fallocate(2).
const (
	fallocKeepSize  = 0x01
	fallocPunchHole = 0x02
	fallocZeroRange = 0x10
)

// piece is shorthand for an expected resolved piece.
func piece(s meta.Slice, off, pos, n uint32) meta.Slice {
	return meta.Slice{ID: s.ID, Size: s.Size, Off: off, Pos: pos, Len: n}
}

func hole(pos, n uint32) meta.Slice { return meta.Slice{Pos: pos, Len: n} }

func (v *env) wantView(ino meta.Ino, index, pos, n uint32, want ...meta.Slice) {
	v.t.Helper()
	if got := v.view(ino, index, pos, n); !reflect.DeepEqual(got, want) {
		v.t.Fatalf("chunk %d/%d [%d,+%d):\n got %v\nwant %v", ino, index, pos, n, got, want)
	}
}

func (v *env) wantLength(ino meta.Ino, n uint64) {
	v.t.Helper()
	if got := v.attr(ino).Length; got != n {
		v.t.Fatalf("length %d, want %d", got, n)
	}
}

func (v *env) wantFreed(s meta.Slice, freed bool) {
	v.t.Helper()
	if _, ok := v.freed()[s.ID]; ok != freed {
		v.t.Fatalf("slice %d freed=%v, want %v", s.ID, ok, freed)
	}
}

func testChunks(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	f := v.file(meta.RootIno, "f")
	before := v.attr(f.Ino)
	time.Sleep(time.Millisecond)
	s1 := v.write(f.Ino, 0, 100)
	if a := v.attr(f.Ino); a.Length != 100 || a.Mtime <= before.Mtime || a.Ctime <= before.Ctime {
		t.Fatalf("after write: %+v", a)
	}
	id, err := v.e.NewSliceID(v.ctx)
	v.check(err, "new slice id")
	s2 := meta.Slice{ID: id, Size: 100, Len: 100, Pos: 50}
	res, err := v.e.WriteChunk(v.ctx, f.Ino, 0, s2)
	v.check(err, "write chunk")
	if res.SliceCount != 2 || res.Attr.Length != 150 {
		t.Fatalf("commit result %+v", res)
	}
	res, err = v.e.WriteChunk(v.ctx, f.Ino, 0, s2)
	v.check(err, "repeated commit of one slice")
	if res.SliceCount != 2 {
		t.Fatalf("a repeated commit added a record: %+v", res)
	}
	ss, err := v.e.ReadChunk(v.ctx, f.Ino, 0)
	v.check(err, "read chunk")
	if !reflect.DeepEqual(ss, []meta.Slice{s1, s2}) {
		t.Fatalf("slice list %v", ss)
	}
	v.wantView(f.Ino, 0, 0, 200, piece(s1, 0, 0, 50), piece(s2, 0, 50, 100), hole(150, 50))
	s3 := v.write(f.Ino, 2*meta.ChunkSize+10, 5)
	v.wantLength(f.Ino, 2*meta.ChunkSize+15)
	v.wantView(f.Ino, 2, 0, 20, hole(0, 10), piece(s3, 0, 10, 5), hole(15, 5))
	if ss, err := v.e.ReadChunk(v.ctx, f.Ino, 1); err != nil || len(ss) != 0 {
		t.Fatalf("unwritten chunk: %v %v", ss, err)
	}
	_, err = v.e.ReadChunk(v.ctx, 9999999, 0)
	v.wantErrno(err, syscall.ENOENT, "read chunk of missing inode")
	d := v.dir(meta.RootIno, "d")
	_, err = v.e.WriteChunk(v.ctx, d.Ino, 0, meta.Slice{ID: id + 1000, Size: 1, Len: 1})
	v.wantErrno(err, syscall.EISDIR, "write chunk to a directory")
	_, err = v.e.WriteChunk(v.ctx, 9999999, 0, meta.Slice{ID: id + 1000, Size: 1, Len: 1})
	v.wantErrno(err, syscall.ENOENT, "write chunk to missing inode")

	seen := make(map[meta.SliceID]bool)
	for range 1000 {
		id, err := v.e.NewSliceID(v.ctx)
		v.check(err, "new slice id")
		if id == 0 || seen[id] || id == s1.ID || id == s2.ID || id == s3.ID {
			t.Fatalf("slice id %d repeated or zero", id)
		}
		seen[id] = true
	}
}

func testTruncate(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	f := v.file(meta.RootIno, "f")
	s1 := v.write(f.Ino, 0, 1000)
	s2 := v.write(f.Ino, meta.ChunkSize, 1000)
	s3 := v.write(f.Ino, 600, 100)
	before := v.attr(f.Ino)
	time.Sleep(time.Millisecond)
	a, err := v.e.Truncate(v.ctx, f.Ino, 500)
	v.check(err, "truncate down")
	if a.Length != 500 || a.Mtime <= before.Mtime || a.Ctime <= before.Ctime {
		t.Fatalf("after truncate %+v", a)
	}
	v.wantView(f.Ino, 0, 0, 1000, piece(s1, 0, 0, 500), hole(500, 500))
	v.wantView(f.Ino, 1, 0, 1000, hole(0, 1000))
	v.wantFreed(s2, true)
	v.wantFreed(s3, true) // wholly past the new end
	v.wantFreed(s1, false)
	_, err = v.e.Truncate(v.ctx, f.Ino, 3*meta.ChunkSize)
	v.check(err, "truncate up")
	v.wantLength(f.Ino, 3*meta.ChunkSize)
	v.wantView(f.Ino, 0, 0, 1000, piece(s1, 0, 0, 500), hole(500, 500))
	_, err = v.e.Truncate(v.ctx, f.Ino, 0)
	v.check(err, "truncate to zero")
	v.wantFreed(s1, true)
	v.wantView(f.Ino, 0, 0, 100, hole(0, 100))

	d := v.dir(meta.RootIno, "d")
	_, err = v.e.Truncate(v.ctx, d.Ino, 0)
	v.wantErrno(err, syscall.EISDIR, "truncate a directory")
	sl := v.mk(meta.RootIno, "sl", meta.TypeSymlink, 0o777)
	_, err = v.e.Truncate(v.ctx, sl.Ino, 0)
	v.wantErrno(err, syscall.EINVAL, "truncate a symlink")
	_, err = v.e.Truncate(v.ctx, 9999999, 0)
	v.wantErrno(err, syscall.ENOENT, "truncate missing")
}

func testFallocate(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	f := v.file(meta.RootIno, "f")
	_, err := v.e.Fallocate(v.ctx, f.Ino, 0, 0, 5000)
	v.check(err, "allocate")
	v.wantLength(f.Ino, 5000)
	_, err = v.e.Fallocate(v.ctx, f.Ino, fallocKeepSize, 0, 9000)
	v.check(err, "allocate keep size")
	v.wantLength(f.Ino, 5000)
	s := v.write(f.Ino, 0, 1000)
	_, err = v.e.Fallocate(v.ctx, f.Ino, fallocPunchHole|fallocKeepSize, 100, 100)
	v.check(err, "punch hole")
	v.wantLength(f.Ino, 5000)
	v.wantView(f.Ino, 0, 0, 1000, piece(s, 0, 0, 100), hole(100, 100), piece(s, 200, 200, 800))
	_, err = v.e.Fallocate(v.ctx, f.Ino, fallocZeroRange, 900, 5000)
	v.check(err, "zero range")
	v.wantLength(f.Ino, 5900)
	v.wantView(f.Ino, 0, 0, 1000, piece(s, 0, 0, 100), hole(100, 100), piece(s, 200, 200, 700), hole(900, 100))
	s2 := v.write(f.Ino, 2000, 10)
	_, err = v.e.Fallocate(v.ctx, f.Ino, fallocPunchHole|fallocKeepSize, 1500, 1000)
	v.check(err, "punch a whole slice")
	v.wantFreed(s2, true)
	v.wantFreed(s, false)

	_, err = v.e.Fallocate(v.ctx, f.Ino, fallocPunchHole, 0, 10)
	v.wantErrno(err, syscall.EOPNOTSUPP, "punch hole without keep size")
	_, err = v.e.Fallocate(v.ctx, f.Ino, 0x40, 0, 10)
	v.wantErrno(err, syscall.EOPNOTSUPP, "unknown mode")
	_, err = v.e.Fallocate(v.ctx, f.Ino, 0, 0, 0)
	v.wantErrno(err, syscall.EINVAL, "zero length")
	d := v.dir(meta.RootIno, "d")
	_, err = v.e.Fallocate(v.ctx, d.Ino, 0, 0, 10)
	v.wantErrno(err, syscall.EISDIR, "fallocate a directory")
}

func testCopy(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	src, dst := v.file(meta.RootIno, "src"), v.file(meta.RootIno, "dst")
	s := v.write(src.Ino, 0, 1000)
	copyRange := func(from meta.Ino, fromOff uint64, to meta.Ino, toOff, n uint64) uint64 {
		got, err := v.e.CopyFileRange(v.ctx, meta.CopyRequest{SrcIno: from, SrcOff: fromOff, DstIno: to, DstOff: toOff, Len: n})
		v.check(err, "copy_file_range")
		return got
	}
	if n := copyRange(src.Ino, 100, dst.Ino, 50, 500); n != 500 {
		t.Fatalf("copied %d", n)
	}
	v.wantLength(dst.Ino, 550)
	v.wantView(dst.Ino, 0, 0, 600, hole(0, 50), piece(s, 100, 50, 500), hole(550, 50))
	if n := copyRange(src.Ino, 900, dst.Ino, meta.ChunkSize-50, 500); n != 100 {
		t.Fatalf("copy past source end copied %d, want 100", n)
	}
	v.wantView(dst.Ino, 0, meta.ChunkSize-50, 50, piece(s, 900, meta.ChunkSize-50, 50))
	v.wantView(dst.Ino, 1, 0, 60, piece(s, 950, 0, 50), hole(50, 10))
	v.wantLength(dst.Ino, meta.ChunkSize+50)
	if n := copyRange(src.Ino, 5000, dst.Ino, 0, 10); n != 0 {
		t.Fatalf("copy from past the end copied %d", n)
	}
	// The slice is shared: it survives the source and goes with the copy.
	_, err := v.e.Unlink(v.ctx, meta.RootIno, "src")
	v.check(err, "unlink src")
	v.check(v.e.Purge(v.ctx, src.Ino), "purge src")
	v.wantFreed(s, false)
	_, err = v.e.Unlink(v.ctx, meta.RootIno, "dst")
	v.check(err, "unlink dst")
	v.check(v.e.Purge(v.ctx, dst.Ino), "purge dst")
	v.wantFreed(s, true)

	// Overlapping copy within one file behaves like a copy through a buffer.
	g := v.file(meta.RootIno, "g")
	a, b := v.write(g.Ino, 0, 100), v.write(g.Ino, 100, 100)
	if n := copyRange(g.Ino, 0, g.Ino, 50, 200); n != 200 {
		t.Fatalf("overlapping copy copied %d", n)
	}
	v.wantLength(g.Ino, 250)
	v.wantView(g.Ino, 0, 0, 250, piece(a, 0, 0, 50), piece(a, 0, 50, 100), piece(b, 0, 150, 100))
	// Holes in the source overwrite data in the destination.
	h := v.file(meta.RootIno, "h")
	_, err = v.e.Truncate(v.ctx, h.Ino, 100)
	v.check(err, "truncate")
	if n := copyRange(h.Ino, 0, g.Ino, 0, 100); n != 100 {
		t.Fatalf("hole copy copied %d", n)
	}
	v.wantView(g.Ino, 0, 0, 250, hole(0, 100), piece(a, 50, 100, 50), piece(b, 0, 150, 100))

	d := v.dir(meta.RootIno, "d")
	_, err = v.e.CopyFileRange(v.ctx, meta.CopyRequest{SrcIno: g.Ino, DstIno: d.Ino, Len: 10})
	v.wantErrno(err, syscall.EISDIR, "copy into a directory")
	_, err = v.e.CopyFileRange(v.ctx, meta.CopyRequest{SrcIno: 9999999, DstIno: g.Ino, Len: 10})
	v.wantErrno(err, syscall.ENOENT, "copy from missing inode")
}

func testCompact(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	f := v.file(meta.RootIno, "f")
	s1, s2 := v.write(f.Ino, 0, 100), v.write(f.Ino, 50, 100)
	id, err := v.e.NewSliceID(v.ctx)
	v.check(err, "new slice id")
	s3 := meta.Slice{ID: id, Size: 150, Len: 150}
	v.check(v.e.CompactChunk(v.ctx, f.Ino, 0, []meta.Slice{s1, s2}, []meta.Slice{s3}), "compact")
	if ss, _ := v.e.ReadChunk(v.ctx, f.Ino, 0); !reflect.DeepEqual(ss, []meta.Slice{s3}) {
		t.Fatalf("after compact: %v", ss)
	}
	v.wantFreed(s1, true)
	v.wantFreed(s2, true)
	v.wantFreed(s3, false)
	s4 := v.write(f.Ino, 10, 10)
	id, err = v.e.NewSliceID(v.ctx)
	v.check(err, "new slice id")
	s5 := meta.Slice{ID: id, Size: 150, Len: 150}
	v.check(v.e.CompactChunk(v.ctx, f.Ino, 0, []meta.Slice{s3}, []meta.Slice{s5}), "compact a prefix")
	if ss, _ := v.e.ReadChunk(v.ctx, f.Ino, 0); !reflect.DeepEqual(ss, []meta.Slice{s5, s4}) {
		t.Fatalf("after prefix compact: %v", ss)
	}
	err = v.e.CompactChunk(v.ctx, f.Ino, 0, []meta.Slice{s3}, []meta.Slice{s1})
	if !errors.Is(err, meta.ErrConflict) {
		t.Fatalf("compact of a stale list: %v, want ErrConflict", err)
	}
	if ss, _ := v.e.ReadChunk(v.ctx, f.Ino, 0); !reflect.DeepEqual(ss, []meta.Slice{s5, s4}) {
		t.Fatalf("failed compact changed the list: %v", ss)
	}
	// A replacement may keep old slices (dropping only hidden ones).
	v.check(v.e.CompactChunk(v.ctx, f.Ino, 0, []meta.Slice{s5, s4}, []meta.Slice{s5, s4}), "compact to itself")
	v.wantFreed(s5, false)
	v.wantFreed(s4, false)
	_, err = v.e.Truncate(v.ctx, f.Ino, 0)
	v.check(err, "truncate")
	v.wantFreed(s5, true)
	v.wantFreed(s4, true)
}

// testWriteSlices commits one packed object's pieces as records of two
// chunks in two batches, and checks the lists, the length, idempotent
// re-sends, and that the object is freed only with its last record.
func testWriteSlices(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	f := v.file(meta.RootIno, "f")
	id, err := v.e.NewSliceID(v.ctx)
	v.check(err, "new slice id")
	const size = 3 * 4096
	a := meta.Slice{ID: id, Size: size, Off: 0, Len: 4096, Pos: 8192}
	b := meta.Slice{ID: id, Size: size, Off: 4096, Len: 100, Pos: 0}
	c := meta.Slice{ID: id, Size: size, Off: 8192, Len: 4096, Pos: 40960}
	res, err := v.e.WriteSlices(v.ctx, f.Ino, []meta.SliceWrite{{Index: 0, S: a}, {Index: 1, S: b, Shared: true}})
	v.check(err, "write slices")
	if res.Counts[0] != 1 || res.Counts[1] != 1 || res.SliceCount != 1 || res.Attr.Length != meta.ChunkSize+100 {
		t.Fatalf("first batch result %+v", res)
	}
	batch := []meta.SliceWrite{{Index: 0, S: c, Shared: true}}
	for range 2 { // the second send is a retry after an unknown outcome
		res, err = v.e.WriteSlices(v.ctx, f.Ino, batch)
		v.check(err, "write slices")
		if res.Counts[0] != 2 {
			t.Fatalf("second batch result %+v", res)
		}
	}
	v.wantView(f.Ino, 0, 0, 45056, hole(0, 8192), piece(a, 0, 8192, 4096), hole(12288, 28672), piece(c, 8192, 40960, 4096))
	// A batch sent again as the prefix of a longer one: only the new
	// record is added.
	g := v.file(meta.RootIno, "g")
	id2, err := v.e.NewSliceID(v.ctx)
	v.check(err, "new slice id")
	p1 := meta.Slice{ID: id2, Size: 300, Off: 0, Len: 100, Pos: 0}
	p2 := meta.Slice{ID: id2, Size: 300, Off: 100, Len: 100, Pos: 1000}
	p3 := meta.Slice{ID: id2, Size: 300, Off: 200, Len: 100, Pos: 500}
	_, err = v.e.WriteSlices(v.ctx, g.Ino, []meta.SliceWrite{{S: p1}, {S: p2, Shared: true}})
	v.check(err, "write slices")
	res, err = v.e.WriteSlices(v.ctx, g.Ino, []meta.SliceWrite{{S: p1}, {S: p2, Shared: true}, {S: p3, Shared: true}})
	v.check(err, "write slices again with one more")
	if res.Counts[0] != 3 || res.Attr.Length != 1100 {
		t.Fatalf("re-sent prefix: %+v", res)
	}
	if ss, err := v.e.ReadChunk(v.ctx, g.Ino, 0); err != nil || !reflect.DeepEqual(ss, []meta.Slice{p1, p2, p3}) {
		t.Fatalf("re-sent prefix: list %v %v", ss, err)
	}
	_, err = v.e.Truncate(v.ctx, g.Ino, 600) // drops p2 only
	v.check(err, "truncate")
	v.wantFreed(p1, false)
	_, err = v.e.Truncate(v.ctx, g.Ino, 0)
	v.check(err, "truncate")
	v.wantFreed(p1, true)
	v.wantView(f.Ino, 1, 0, 100, piece(b, 4096, 0, 100))
	if _, err := v.e.WriteSlices(v.ctx, f.Ino, []meta.SliceWrite{{Index: 0, S: meta.Slice{ID: id, Size: 1, Len: 0}}}); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("empty record: %v, want EINVAL", err)
	}
	_, err = v.e.Truncate(v.ctx, f.Ino, 10000) // drops b and c, keeps part of a
	v.check(err, "truncate")
	v.wantFreed(a, false)
	_, err = v.e.Truncate(v.ctx, f.Ino, 0)
	v.check(err, "truncate")
	v.wantFreed(a, true)
}
