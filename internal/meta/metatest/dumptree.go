package metatest

import (
	"bytes"
	"reflect"
	"slices"
	"testing"

	"shoal/internal/meta"
)

// testDumpTree: a snapshot's tree dumped with DumpTree and restored into
// an empty engine is a volume of its own whose root is the snapshot's
// top: the tree as it was at the snapshot (not as it is now), writable,
// clean for Check, with reference counts and usage of its own.
func testDumpTree(t *testing.T, newEngine Factory) {
	src := open(t, newEngine)
	sn, ok1 := src.e.(meta.Snapshots)
	td, ok2 := src.e.(meta.TreeDumper)
	if !ok1 || !ok2 {
		t.Skip("engine has no Snapshots or TreeDumper")
	}
	d := src.dir(meta.RootIno, "d")
	sub := src.dir(d.Ino, "sub")
	f := src.file(d.Ino, "f")
	s1 := src.write(f.Ino, 0, 1000)
	s2 := src.write(f.Ino, meta.ChunkSize+5, 10)
	_, err := src.e.Link(src.ctx, f.Ino, sub.Ino, "f-link")
	src.check(err, "link")
	g := src.file(sub.Ino, "g")
	_, err = src.e.CopyFileRange(src.ctx, meta.CopyRequest{SrcIno: f.Ino, DstIno: g.Ino, DstOff: 10, Len: 500})
	src.check(err, "copy")
	src.mk(sub.Ino, "sl", meta.TypeSymlink, 0o777)
	src.check(src.e.Setxattr(src.ctx, g.Ino, "user.k", []byte("v"), 0), "setxattr")
	outside := src.file(meta.RootIno, "outside")
	src.write(outside.Ino, 0, 77)

	snap, err := sn.CreateSnapshot(src.ctx, "b", "/d")
	src.check(err, "snapshot")
	// Changes after the snapshot are not in the dump.
	src.write(f.Ino, 0, 20)
	src.file(d.Ino, "later")

	var buf bytes.Buffer
	got, err := td.DumpTree(src.ctx, snap.Ino, &buf)
	src.check(err, "dump tree")
	// root (the snapshot's top), sub, f, g, sl
	if got.Inodes != 5 || got.Bytes != int64(meta.ChunkSize+15+510) {
		t.Fatalf("tree dump counted %d inodes, %d bytes", got.Inodes, got.Bytes)
	}
	if want := map[meta.SliceID]uint32{s1.ID: s1.Size, s2.ID: s2.Size}; !reflect.DeepEqual(got.Slices, want) {
		t.Fatalf("tree dump slices %v, want %v", got.Slices, want)
	}
	if _, err := td.DumpTree(src.ctx, snap.Ino+1000, &bytes.Buffer{}); err == nil {
		t.Fatalf("dump of a missing tree succeeded")
	}

	dstEngine := newEngine(t)
	t.Cleanup(func() { _ = dstEngine.Close() })
	dst := &env{t: t, e: dstEngine, ctx: src.ctx}
	dst.check(dstEngine.(meta.Dumper).Restore(dst.ctx, &buf), "restore")
	if names := dst.names(meta.RootIno); !slices.Equal(names, []string{"f", "sub"}) {
		t.Fatalf("restored root holds %q", names)
	}
	rsub := dst.lookup(meta.RootIno, "sub")
	if names := dst.names(rsub.Ino); !slices.Equal(names, []string{"f-link", "g", "sl"}) {
		t.Fatalf("restored sub holds %q", names)
	}
	rf := dst.lookup(meta.RootIno, "f")
	if rf.Attr.Nlink != 2 || dst.lookup(rsub.Ino, "f-link").Ino != rf.Ino || rf.Attr.Parent != meta.RootIno {
		t.Fatalf("restored f: %+v", rf)
	}
	if v := dst.view(rf.Ino, 0, 0, 1000); len(v) != 1 || v[0].ID != s1.ID {
		t.Fatalf("restored f holds %+v, want slice %d as at the snapshot", v, s1.ID)
	}
	val, err := dst.e.Getxattr(dst.ctx, dst.lookup(rsub.Ino, "g").Ino, "user.k")
	if err != nil || string(val) != "v" {
		t.Fatalf("restored xattr %q, %v", val, err)
	}
	if ck, ok := dst.e.(meta.Checker); ok {
		rep, err := ck.Check(dst.ctx, false)
		dst.check(err, "check")
		if len(rep.Problems) > 0 || rep.Inodes != 5 {
			t.Fatalf("check of the restored tree: %+v", rep)
		}
	}
	if st := dst.statfs(); st.UsedInodes != 5 {
		t.Fatalf("restored usage %+v", st)
	}
	// Writable (no snapshot marks), and new inodes and slices are new.
	fresh := dst.file(rsub.Ino, "fresh")
	if fresh.Ino <= rf.Ino || fresh.Ino <= rsub.Ino {
		t.Fatalf("restored volume reused inode %d", fresh.Ino)
	}
	if s := dst.write(rf.Ino, 0, 5); s.ID <= s2.ID {
		t.Fatalf("restored volume reused slice id %d", s.ID)
	}
}
