package metatest

import (
	"bytes"
	"io"
	"slices"
	"syscall"
	"testing"

	"shoal/internal/meta"
)

// testDumpLive: DumpLive dumps a live tree as a snapshot of it would be
// dumped: link counts and parents of a copy (a hard link out of the tree
// does not count), the volume root without /.snapshots and /.trash,
// restorable and clean for Check; paths inside /.snapshots, files and
// missing paths are refused.
func testDumpLive(t *testing.T, newEngine Factory) {
	v := openLimited(t, newEngine, meta.Format{TrashDays: 1})
	ld, ok1 := v.e.(meta.LiveTreeDumper)
	sn, ok2 := v.e.(meta.Snapshots)
	if !ok1 || !ok2 {
		t.Skip("engine has no LiveTreeDumper or Snapshots")
	}
	d := v.dir(meta.RootIno, "d")
	sub := v.dir(d.Ino, "sub")
	f := v.file(d.Ino, "f")
	s1 := v.write(f.Ino, 0, 1000)
	s2 := v.write(f.Ino, meta.ChunkSize+5, 10)
	_, err := v.e.Link(v.ctx, f.Ino, sub.Ino, "f-link")
	v.check(err, "link")
	_, err = v.e.Link(v.ctx, f.Ino, meta.RootIno, "out-link")
	v.check(err, "link out of d")
	g := v.file(sub.Ino, "g")
	v.check(v.e.Setxattr(v.ctx, g.Ino, "user.k", []byte("v"), 0), "setxattr")
	v.mk(sub.Ino, "sl", meta.TypeSymlink, 0o777)
	gone := v.file(meta.RootIno, "gone")
	v.write(gone.Ino, 0, 10)
	_, err = v.e.Unlink(v.ctx, meta.RootIno, "gone") // into /.trash
	v.check(err, "unlink")
	_, err = sn.CreateSnapshot(v.ctx, "s", "/")
	v.check(err, "snapshot")

	dump := func(path string) (meta.TreeDump, *bytes.Buffer, error) {
		var buf *bytes.Buffer
		begins := 0
		seen := map[meta.SliceID]uint32{}
		got, err := ld.DumpLive(v.ctx, meta.LiveDump{Path: path, Begin: func() (io.Writer, error) {
			begins++
			buf = &bytes.Buffer{}
			return buf, nil
		}, Slice: func(id meta.SliceID, size uint32) { seen[id] = size }})
		if err == nil && begins == 0 {
			t.Fatalf("DumpLive %s never called Begin", path)
		}
		for id, size := range got.Slices {
			if seen[id] != size {
				t.Fatalf("DumpLive %s named slice %d (size %d) but gave %d to Slice", path, id, size, seen[id])
			}
		}
		return got, buf, err
	}
	got, buf, err := dump("/d")
	v.check(err, "dump /d")
	if got.Inodes != 5 || got.Bytes != int64(meta.ChunkSize+15) {
		t.Fatalf("live dump of /d counted %d inodes, %d bytes", got.Inodes, got.Bytes)
	}
	if len(got.Slices) != 2 || got.Slices[s1.ID] != s1.Size || got.Slices[s2.ID] != s2.Size {
		t.Fatalf("live dump slices %v", got.Slices)
	}
	r := restored(t, newEngine, v, buf, 5)
	if names := r.names(meta.RootIno); !slices.Equal(names, []string{"f", "sub"}) {
		t.Fatalf("restored /d holds %q", names)
	}
	rf := r.lookup(meta.RootIno, "f")
	if rf.Attr.Nlink != 2 || rf.Attr.Parent != meta.RootIno || r.lookup(r.lookup(meta.RootIno, "sub").Ino, "f-link").Ino != rf.Ino {
		t.Fatalf("restored f: %+v", rf)
	}

	_, buf, err = dump("/")
	v.check(err, "dump /")
	r = restored(t, newEngine, v, buf, 6)
	if names := r.names(meta.RootIno); !slices.Equal(names, []string{"d", "out-link"}) {
		t.Fatalf("restored volume root holds %q", names)
	}
	if a := r.attr(meta.RootIno); a.Nlink != 3 {
		t.Fatalf("restored root has %d links, want 3 (only d)", a.Nlink)
	}
	if rf := r.lookup(r.lookup(meta.RootIno, "d").Ino, "f"); rf.Attr.Nlink != 3 {
		t.Fatalf("restored f has %d links, want 3", rf.Attr.Nlink)
	}

	for path, want := range map[string]syscall.Errno{"/.snapshots/s": syscall.EINVAL, "/.snapshots": syscall.EINVAL,
		"/d/f": syscall.ENOTDIR, "/nope": syscall.ENOENT} {
		_, _, err := dump(path)
		v.wantErrno(err, want, "live dump of "+path)
	}
}

// restored restores a dump into a new engine, checks it clean with
// inodes inodes, and returns it.
func restored(t *testing.T, newEngine Factory, src *env, dump io.Reader, inodes uint64) *env {
	t.Helper()
	e := newEngine(t)
	t.Cleanup(func() { _ = e.Close() })
	r := &env{t: t, e: e, ctx: src.ctx}
	r.check(e.(meta.Dumper).Restore(r.ctx, dump), "restore")
	if ck, ok := e.(meta.Checker); ok {
		rep, err := ck.Check(r.ctx, false)
		r.check(err, "check")
		if len(rep.Problems) > 0 || uint64(rep.Inodes) != inodes {
			t.Fatalf("check of the restored tree (want %d inodes): %+v", inodes, rep)
		}
	}
	if st := r.statfs(); st.UsedInodes != inodes {
		t.Fatalf("restored usage %+v, want %d inodes", st, inodes)
	}
	return r
}
