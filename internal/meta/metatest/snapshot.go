package metatest

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"syscall"
	"testing"

	"shoal/internal/meta"
)

// testSnapshot: a snapshot is the tree as it was, read-only (EROFS),
// sharing slices with the volume; deleting it frees only slices nothing
// else holds; restore puts a writable copy back and keeps what was there.
func testSnapshot(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	sn, ok := v.e.(meta.Snapshots)
	if !ok {
		t.Skip("engine has no Snapshots")
	}
	d := v.dir(meta.RootIno, "d")
	f := v.file(d.Ino, "f")
	kept := v.write(f.Ino, 0, 100)
	_, err := v.e.Link(v.ctx, f.Ino, d.Ino, "hard")
	v.check(err, "link")
	sub := v.dir(d.Ino, "sub")
	v.check(v.e.Setxattr(v.ctx, sub.Ino, "user.k", []byte("v"), 0), "setxattr")
	sym, err := v.e.Mknod(v.ctx, meta.MknodRequest{Parent: d.Ino, Name: "ln", Type: meta.TypeSymlink, Target: "f", Mode: 0o777})
	v.check(err, "symlink")
	before := v.statfs()

	snap, err := sn.CreateSnapshot(v.ctx, "s1", "/")
	v.check(err, "create snapshot")
	if snap.Inodes != 5 { // root, d, f (two names), sub, ln
		t.Fatalf("snapshot copied %d inodes, want 5", snap.Inodes)
	}
	_, err = sn.CreateSnapshot(v.ctx, "s1", "/")
	v.wantErrno(err, syscall.EEXIST, "second snapshot of one name")
	if after := v.statfs(); after.UsedInodes != before.UsedInodes || after.UsedSpace != before.UsedSpace {
		t.Fatalf("usage moved with a snapshot: %+v -> %+v", before, after)
	}
	// The live tree changes after the snapshot; the snapshot does not.
	v.write(f.Ino, 0, 50)
	_, err = v.e.Unlink(v.ctx, d.Ino, "hard")
	v.check(err, "unlink hard")
	v.file(d.Ino, "new")

	snaps := v.lookup(meta.RootIno, ".snapshots")
	if names := v.names(snaps.Ino); !slices.Equal(names, []string{"s1"}) {
		t.Fatalf("/.snapshots holds %q", names)
	}
	sroot := v.lookup(snaps.Ino, "s1")
	if names := v.names(sroot.Ino); slices.Contains(names, ".snapshots") {
		t.Fatalf("the snapshot holds itself: %q", names)
	}
	sd := v.lookup(sroot.Ino, "d")
	if names := v.names(sd.Ino); !slices.Equal(names, []string{"f", "hard", "ln", "sub"}) {
		t.Fatalf("snapshot of d holds %q", names)
	}
	sf, sh := v.lookup(sd.Ino, "f"), v.lookup(sd.Ino, "hard")
	if sf.Ino != sh.Ino || sf.Attr.Nlink != 2 || sf.Ino == f.Ino {
		t.Fatalf("hard links in the snapshot: f=%d hard=%d nlink %d (live %d)", sf.Ino, sh.Ino, sf.Attr.Nlink, f.Ino)
	}
	if got := v.view(sf.Ino, 0, 0, 100); len(got) != 1 || got[0].ID != kept.ID || got[0].Len != 100 {
		t.Fatalf("snapshot file view %+v, want slice %d whole", got, kept.ID)
	}
	target, err := v.e.Readlink(v.ctx, v.lookup(sd.Ino, "ln").Ino)
	if err != nil || target != "f" {
		t.Fatalf("snapshot symlink %q, %v", target, err)
	}
	val, err := v.e.Getxattr(v.ctx, v.lookup(sd.Ino, "sub").Ino, "user.k")
	if err != nil || string(val) != "v" {
		t.Fatalf("snapshot xattr %q, %v", val, err)
	}
	_ = sym

	// Read-only: every kind of change fails with EROFS.
	_, err = v.e.Mknod(v.ctx, meta.MknodRequest{Parent: sd.Ino, Name: "x", Type: meta.TypeFile, Mode: 0o644})
	v.wantErrno(err, syscall.EROFS, "create in a snapshot")
	_, err = v.e.Mknod(v.ctx, meta.MknodRequest{Parent: snaps.Ino, Name: "x", Type: meta.TypeDir, Mode: 0o755})
	v.wantErrno(err, syscall.EROFS, "mkdir in /.snapshots")
	_, err = v.e.Unlink(v.ctx, sd.Ino, "f")
	v.wantErrno(err, syscall.EROFS, "unlink in a snapshot")
	v.wantErrno(v.e.Rmdir(v.ctx, sd.Ino, "sub"), syscall.EROFS, "rmdir in a snapshot")
	_, err = v.e.Rename(v.ctx, meta.RenameRequest{OldParent: sd.Ino, OldName: "f", NewParent: d.Ino, NewName: "stolen"})
	v.wantErrno(err, syscall.EROFS, "rename out of a snapshot")
	_, err = v.e.Truncate(v.ctx, sf.Ino, 0)
	v.wantErrno(err, syscall.EROFS, "truncate a snapshot file")
	_, err = v.e.WriteChunk(v.ctx, sf.Ino, 0, meta.Slice{ID: kept.ID, Size: kept.Size, Len: 10})
	v.wantErrno(err, syscall.EROFS, "write a snapshot file")
	_, err = v.e.Setattr(v.ctx, sf.Ino, meta.SetattrRequest{Valid: meta.SetMode, Mode: 0o600})
	v.wantErrno(err, syscall.EROFS, "chmod a snapshot file")
	v.wantErrno(v.e.Setxattr(v.ctx, sf.Ino, "user.x", []byte("1"), 0), syscall.EROFS, "setxattr on a snapshot file")
	if ot, ok := v.e.(meta.OpenTracker); ok {
		_, err = ot.Open(v.ctx, sf.Ino, meta.MayWrite)
		v.wantErrno(err, syscall.EROFS, "open a snapshot file for writing")
		_, err = ot.Open(v.ctx, sf.Ino, meta.MayRead)
		v.check(err, "open a snapshot file for reading")
		v.check(ot.Release(v.ctx, sf.Ino), "release")
	}

	// A snapshot of a subtree; list; restore.
	_, err = sn.CreateSnapshot(v.ctx, "s2", "d/sub")
	v.check(err, "snapshot of d/sub")
	list, err := sn.ListSnapshots(v.ctx)
	v.check(err, "list")
	if len(list) != 2 || list[0].Name != "s1" || list[1].Name != "s2" || list[1].Path != "/d/sub" {
		t.Fatalf("list %+v", list)
	}
	aside, err := sn.RestoreSnapshot(v.ctx, "s1", "d")
	v.check(err, "restore d")
	if aside == "" {
		t.Fatal("restore over d moved nothing aside")
	}
	nd := v.lookup(meta.RootIno, "d")
	if names := v.names(nd.Ino); !slices.Equal(names, []string{"f", "hard", "ln", "sub"}) {
		t.Fatalf("restored d holds %q", names)
	}
	if moved := v.lookup(meta.RootIno, aside); !slices.Contains(v.names(moved.Ino), "new") {
		t.Fatalf("the d moved aside lost its files")
	}
	rf := v.lookup(nd.Ino, "f")
	_, err = v.e.Truncate(v.ctx, rf.Ino, 10)
	v.check(err, "truncate a restored file (writable)")

	if ck, ok := v.e.(meta.Checker); ok {
		rep, err := ck.Check(v.ctx, false)
		v.check(err, "fsck")
		if len(rep.Problems) > 0 {
			t.Fatalf("fsck after snapshots: %q", rep.Problems)
		}
	}
	// A dump carries the snapshots: listed, read-only, usage uncounted.
	if d, ok := v.e.(meta.Dumper); ok {
		var buf bytes.Buffer
		v.check(d.Dump(v.ctx, &buf), "dump")
		other := newEngine(t)
		t.Cleanup(func() { _ = other.Close() })
		w := &env{t: t, e: other, ctx: v.ctx}
		w.check(other.(meta.Dumper).Restore(w.ctx, &buf), "restore")
		got, err := other.(meta.Snapshots).ListSnapshots(w.ctx)
		w.check(err, "list restored snapshots")
		if !reflect.DeepEqual(got, list) {
			t.Fatalf("restored snapshots %+v, want %+v", got, list)
		}
		rs := w.lookup(w.lookup(w.lookup(meta.RootIno, ".snapshots").Ino, "s1").Ino, "d")
		_, err = other.Unlink(w.ctx, rs.Ino, "f")
		w.wantErrno(err, syscall.EROFS, "unlink in a restored snapshot")
		if a, b := v.statfs(), w.statfs(); a.UsedInodes != b.UsedInodes || a.UsedSpace != b.UsedSpace {
			t.Fatalf("usage after restore %+v, source %+v", b, a)
		}
	}
	// Deleting every holder frees the slice; deleting a snapshot alone
	// frees nothing the volume still shows.
	v.check(sn.DeleteSnapshot(v.ctx, "s2"), "delete s2")
	v.wantErrno(sn.DeleteSnapshot(v.ctx, "s2"), syscall.ENOENT, "delete s2 again")
	// A snapshot file open while its snapshot is deleted becomes an
	// orphan that its last release purges (not EROFS: it is no longer
	// part of a snapshot).
	ot, tracks := v.e.(meta.OpenTracker)
	if tracks {
		_, err = ot.Open(v.ctx, sf.Ino, meta.MayRead)
		v.check(err, "open a snapshot file before deleting its snapshot")
	}
	v.check(sn.DeleteSnapshot(v.ctx, "s1"), "delete s1")
	if tracks {
		v.check(ot.Release(v.ctx, sf.Ino), "release")
		v.check(v.e.Purge(v.ctx, sf.Ino), "purge the file of a deleted snapshot")
		if _, err := v.e.Getattr(v.ctx, sf.Ino); !errors.Is(err, syscall.ENOENT) {
			t.Fatalf("file of a deleted snapshot after its last release: %v, want ENOENT", err)
		}
	}
	if v.freedHas(kept.ID) {
		t.Fatalf("slice %d freed while the restored file holds it", kept.ID)
	}
	_, err = v.e.Unlink(v.ctx, nd.Ino, "f")
	v.check(err, "unlink restored f")
	_, err = v.e.Unlink(v.ctx, nd.Ino, "hard")
	v.check(err, "unlink restored hard")
	v.check(v.e.Purge(v.ctx, rf.Ino), "purge")
	if v.freedHas(kept.ID) {
		t.Fatalf("slice %d freed while the live file moved aside holds it", kept.ID)
	}
	old := v.lookup(meta.RootIno, aside)
	_, err = v.e.Unlink(v.ctx, old.Ino, "f")
	v.check(err, "unlink the f moved aside")
	v.check(v.e.Purge(v.ctx, f.Ino), "purge")
	if !v.freedHas(kept.ID) {
		t.Fatalf("slice %d not freed after its last holder went", kept.ID)
	}
	if ck, ok := v.e.(meta.Checker); ok {
		rep, err := ck.Check(v.ctx, false)
		v.check(err, "fsck")
		if len(rep.Problems) > 0 {
			t.Fatalf("fsck after deleting snapshots: %q", rep.Problems)
		}
	}
}

// testClone: a clone is a writable copy sharing slices; a tree clone keeps
// its hard links; an untrusted caller needs read access to the source.
func testClone(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	cl, ok := v.e.(meta.Cloner)
	if !ok {
		t.Skip("engine has no Cloner")
	}
	d := v.dir(meta.RootIno, "d")
	f := v.file(d.Ino, "f")
	s := v.write(f.Ino, 0, 100)
	_, err := v.e.Link(v.ctx, f.Ino, d.Ino, "g")
	v.check(err, "link")
	v.dir(d.Ino, "e")
	before := v.statfs()

	one, err := cl.Clone(v.ctx, meta.CloneRequest{Src: f.Ino, Parent: meta.RootIno, Name: "f2"})
	v.check(err, "clone a file")
	if one.Attr.Nlink != 1 || one.Attr.Length != 100 {
		t.Fatalf("file clone attr %+v", one.Attr)
	}
	tree, err := cl.Clone(v.ctx, meta.CloneRequest{Src: d.Ino, Parent: meta.RootIno, Name: "d2"})
	v.check(err, "clone a tree")
	if names := v.names(tree.Ino); !slices.Equal(names, []string{"e", "f", "g"}) {
		t.Fatalf("tree clone holds %q", names)
	}
	cf, cg := v.lookup(tree.Ino, "f"), v.lookup(tree.Ino, "g")
	if cf.Ino != cg.Ino || cf.Attr.Nlink != 2 || tree.Attr.Nlink != 3 {
		t.Fatalf("tree clone links: f %d g %d nlink %d, dir nlink %d", cf.Ino, cg.Ino, cf.Attr.Nlink, tree.Attr.Nlink)
	}
	if root := v.attr(meta.RootIno); root.Nlink != 4 {
		t.Fatalf("root nlink %d after cloning a directory into it, want 4", root.Nlink)
	}
	after := v.statfs()
	if after.UsedInodes != before.UsedInodes+4 || after.UsedSpace != before.UsedSpace+2*4096 {
		t.Fatalf("usage after clones %+v, before %+v", after, before)
	}
	_, err = cl.Clone(v.ctx, meta.CloneRequest{Src: f.Ino, Parent: meta.RootIno, Name: "f2"})
	v.wantErrno(err, syscall.EEXIST, "clone over a name")
	_, err = cl.Clone(v.ctx, meta.CloneRequest{Src: d.Ino, Parent: d.Ino, Name: "self"})
	v.wantErrno(err, syscall.EINVAL, "clone a tree into itself")

	// A clone counts in directory quotas like new files.
	if qs, ok := v.e.(meta.Quotas); ok {
		q := v.dir(meta.RootIno, "q")
		_, err := qs.SetQuota(v.ctx, q.Ino, 0, 2)
		v.check(err, "set quota")
		_, err = cl.Clone(v.ctx, meta.CloneRequest{Src: d.Ino, Parent: q.Ino, Name: "d"})
		v.wantErrno(err, syscall.EDQUOT, "clone of 3 inodes under a 2-inode quota")
		_, err = cl.Clone(v.ctx, meta.CloneRequest{Src: f.Ino, Parent: q.Ino, Name: "f"})
		v.check(err, "clone of 1 inode under a 2-inode quota")
		got, err := qs.GetQuota(v.ctx, q.Ino)
		v.check(err, "get quota")
		if got.UsedInodes != 1 || got.UsedSpace != 4096 {
			t.Fatalf("quota usage after a clone %+v", got)
		}
	}
	// Copy on write: the clone changes alone.
	v.write(cf.Ino, 0, 10)
	if got := v.view(f.Ino, 0, 0, 10); got[0].ID != s.ID {
		t.Fatalf("a write to the clone reached the source: %+v", got)
	}
	// An unprivileged caller cannot clone what it cannot read.
	secret := v.file(d.Ino, "secret")
	_, err = v.e.Setattr(v.ctx, secret.Ino, meta.SetattrRequest{Valid: meta.SetMode, Mode: 0o600})
	v.check(err, "chmod")
	_, err = v.e.Setattr(v.ctx, meta.RootIno, meta.SetattrRequest{Valid: meta.SetMode, Mode: 0o777})
	v.check(err, "chmod root")
	user := v.as(meta.Cred{Uid: 1000, Gid: 1000, Trusted: true})
	_, err = cl.Clone(user, meta.CloneRequest{Src: d.Ino, Parent: meta.RootIno, Name: "d3"})
	v.wantErrno(err, syscall.EACCES, "clone of an unreadable file")
	mine, err := cl.Clone(user, meta.CloneRequest{Src: f.Ino, Parent: meta.RootIno, Name: "f3", Preserve: true})
	v.check(err, "clone by a user")
	if mine.Attr.Uid != 1000 {
		t.Fatalf("a user's clone is owned by %d", mine.Attr.Uid)
	}
	if ck, ok := v.e.(meta.Checker); ok {
		rep, err := ck.Check(v.ctx, false)
		v.check(err, "fsck")
		if len(rep.Problems) > 0 {
			t.Fatalf("fsck after clones: %q", rep.Problems)
		}
	}
}

func (v *env) lookup(parent meta.Ino, name string) meta.Entry {
	v.t.Helper()
	ent, err := v.e.Lookup(v.ctx, parent, name)
	v.check(err, "lookup "+name)
	return ent
}

func (v *env) statfs() meta.Statfs {
	v.t.Helper()
	st, err := v.e.Statfs(v.ctx)
	v.check(err, "statfs")
	return st
}

func (v *env) freedHas(id meta.SliceID) bool {
	v.t.Helper()
	_, ok := v.freed()[id]
	return ok
}
