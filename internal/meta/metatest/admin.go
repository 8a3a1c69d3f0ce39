package metatest

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"shoal/internal/meta"
)

// populate builds a small volume exercising every kind of record: dirs,
// files with data, hard links, a clone, symlinks, special files, xattrs,
// an orphan and a freed slice.
func populate(v *env) (orphan meta.Ino) {
	d := v.dir(meta.RootIno, "d")
	sub := v.dir(d.Ino, "sub")
	f := v.file(d.Ino, "f")
	v.write(f.Ino, 0, 1000)
	v.write(f.Ino, meta.ChunkSize+5, 10)
	_, err := v.e.Link(v.ctx, f.Ino, sub.Ino, "f-link")
	v.check(err, "link")
	g := v.file(meta.RootIno, "g")
	_, err = v.e.CopyFileRange(v.ctx, meta.CopyRequest{SrcIno: f.Ino, DstIno: g.Ino, DstOff: 10, Len: 500})
	v.check(err, "copy")
	v.mk(sub.Ino, "sl", meta.TypeSymlink, 0o777)
	v.mk(sub.Ino, "fifo", meta.TypeFIFO, 0o600)
	v.check(v.e.Setxattr(v.ctx, g.Ino, "user.k", []byte("v"), 0), "setxattr")
	o := v.file(meta.RootIno, "o")
	v.write(o.Ino, 0, 10)
	_, err = v.e.Unlink(v.ctx, meta.RootIno, "o")
	v.check(err, "unlink")
	h := v.file(meta.RootIno, "h")
	v.write(h.Ino, 0, 10)
	_, err = v.e.Truncate(v.ctx, h.Ino, 0)
	v.check(err, "truncate")
	return o.Ino
}

func testAdmin(t *testing.T, newEngine Factory) {
	t.Run("Check", func(t *testing.T) {
		v := open(t, newEngine)
		ck, ok := v.e.(meta.Checker)
		if !ok {
			t.Skip("engine has no Checker")
		}
		populate(v)
		rep, err := ck.Check(v.ctx, false)
		v.check(err, "check")
		if len(rep.Problems) != 0 || rep.Dirs != 3 || rep.Files != 4 || rep.Inodes != 9 {
			t.Fatalf("healthy volume: %+v", rep)
		}
	})
	t.Run("Scanner", func(t *testing.T) { testScanner(open(t, newEngine)) })
	t.Run("Dump", func(t *testing.T) { testDump(t, newEngine) })
	t.Run("DumpTree", func(t *testing.T) { testDumpTree(t, newEngine) })
	t.Run("DumpLive", func(t *testing.T) { testDumpLive(t, newEngine) })
}

func testScanner(v *env) {
	sc, ok := v.e.(meta.Scanner)
	if !ok {
		v.t.Skip("engine has no Scanner")
	}
	orphan := populate(v)
	orphans, err := sc.Orphans(v.ctx, 0)
	v.check(err, "orphans")
	if len(orphans) != 1 || orphans[0].Ino != orphan || orphans[0].Since == 0 {
		v.t.Fatalf("orphans %+v, want ino %d", orphans, orphan)
	}
	var seen []string
	err = sc.ScanSlices(v.ctx, func(ino meta.Ino, index uint32, s meta.Slice) error {
		seen = append(seen, fmt.Sprintf("%d/%d/%d", ino, index, s.ID))
		return nil
	})
	v.check(err, "scan slices")
	if len(seen) != 4 { // f: 2 records, g: 1 clone record, o: 1
		v.t.Fatalf("slice records %v", seen)
	}
	stop := errors.New("stop")
	if err := sc.ScanSlices(v.ctx, func(meta.Ino, uint32, meta.Slice) error { return stop }); !errors.Is(err, stop) {
		v.t.Fatalf("ScanSlices did not return fn's error: %v", err)
	}
	v.check(v.e.Purge(v.ctx, orphan), "purge")
	if orphans, _ := sc.Orphans(v.ctx, 0); len(orphans) != 0 {
		v.t.Fatalf("orphans after purge %+v", orphans)
	}
}

func testDump(t *testing.T, newEngine Factory) {
	src := open(t, newEngine)
	d, ok := src.e.(meta.Dumper)
	if !ok {
		t.Skip("engine has no Dumper")
	}
	populate(src)
	var buf bytes.Buffer
	src.check(d.Dump(src.ctx, &buf), "dump")
	if err := d.Restore(src.ctx, bytes.NewReader(buf.Bytes())); !errors.Is(err, meta.ErrFormatted) {
		t.Fatalf("restore into a formatted volume: %v", err)
	}
	dstEngine := newEngine(t)
	t.Cleanup(func() { _ = dstEngine.Close() })
	dst := &env{t: t, e: dstEngine, ctx: src.ctx}
	dst.check(dstEngine.(meta.Dumper).Restore(dst.ctx, &buf), "restore")
	if f, err := dstEngine.Load(dst.ctx); err != nil || f.Name != "test" {
		t.Fatalf("restored format %+v %v", f, err)
	}
	sameTree(t, src, dst, meta.RootIno)
	if a, b := src.freed(), dst.freed(); !reflect.DeepEqual(a, b) {
		t.Fatalf("freed lists differ: %v vs %v", a, b)
	}
	srcSt, _ := src.e.Statfs(src.ctx)
	dstSt, _ := dst.e.Statfs(dst.ctx)
	if srcSt != dstSt {
		t.Fatalf("statfs %+v vs %+v", srcSt, dstSt)
	}
	// New inodes in the restored volume do not reuse numbers.
	fresh := dst.file(meta.RootIno, "fresh")
	if _, err := src.e.Getattr(src.ctx, fresh.Ino); err == nil {
		t.Fatalf("restored volume handed out ino %d again", fresh.Ino)
	}
}

// sameTree compares directory ino and everything under it in two engines.
func sameTree(t *testing.T, a, b *env, ino meta.Ino) {
	t.Helper()
	ea, err := a.e.Readdir(a.ctx, ino, "", 0, true)
	a.check(err, "readdir")
	eb, err := b.e.Readdir(b.ctx, ino, "", 0, true)
	b.check(err, "readdir")
	if !reflect.DeepEqual(ea, eb) {
		t.Fatalf("directory %d differs:\n%v\n%v", ino, ea, eb)
	}
	for _, de := range ea {
		sameInode(t, a, b, de)
	}
}

func sameInode(t *testing.T, a, b *env, de meta.DirEntry) {
	t.Helper()
	xa, _ := a.e.Listxattr(a.ctx, de.Ino)
	xb, _ := b.e.Listxattr(b.ctx, de.Ino)
	if !slices.Equal(xa, xb) {
		t.Fatalf("xattrs of %q differ: %v %v", de.Name, xa, xb)
	}
	switch de.Type {
	case meta.TypeDir:
		sameTree(t, a, b, de.Ino)
	case meta.TypeSymlink:
		la, _ := a.e.Readlink(a.ctx, de.Ino)
		lb, _ := b.e.Readlink(b.ctx, de.Ino)
		if la != lb {
			t.Fatalf("symlink %q: %q vs %q", de.Name, la, lb)
		}
	case meta.TypeFile:
		for index := uint32(0); uint64(index)*meta.ChunkSize < de.Attr.Length; index++ {
			ca, _ := a.e.ReadChunk(a.ctx, de.Ino, index)
			cb, _ := b.e.ReadChunk(b.ctx, de.Ino, index)
			if !reflect.DeepEqual(ca, cb) {
				t.Fatalf("file %q chunk %d: %v vs %v", de.Name, index, ca, cb)
			}
		}
	}
}
