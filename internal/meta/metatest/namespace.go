package metatest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"shoal/internal/meta"
)

func testFormat(t *testing.T, newEngine Factory) {
	e := newEngine(t)
	defer e.Close()
	v := &env{t: t, e: e, ctx: t.Context()}
	if _, err := e.Load(v.ctx); !errors.Is(err, meta.ErrNotFormatted) {
		t.Fatalf("Load before Format: %v, want ErrNotFormatted", err)
	}
	f := meta.Format{Name: "vol", UUID: "u-1", Storage: "mem", BlockSize: 1 << 20, Capacity: 1 << 30, Inodes: 1000}
	ctx := meta.WithCred(v.ctx, meta.Cred{Uid: 42, Gid: 43})
	v.check(e.Format(ctx, f, false), "format")
	got, err := e.Load(v.ctx)
	v.check(err, "load")
	if got.Name != "vol" || got.UUID != "u-1" || got.Version != meta.CurrentFormatVersion || got.Capacity != 1<<30 {
		t.Fatalf("loaded %+v", got)
	}
	if err := e.Format(v.ctx, f, false); !errors.Is(err, meta.ErrFormatted) {
		t.Fatalf("second Format: %v, want ErrFormatted", err)
	}
	root := v.attr(meta.RootIno)
	if root.Type != meta.TypeDir || root.Mode != 0o755 || root.Uid != 42 || root.Gid != 43 || root.Nlink != 2 {
		t.Fatalf("root attr %+v", root)
	}
	v.file(meta.RootIno, "keep")
	f.Name = "renamed"
	v.check(e.Format(v.ctx, f, true), "forced format")
	if got, _ := e.Load(v.ctx); got.Name != "renamed" {
		t.Fatalf("forced format kept name %q", got.Name)
	}
	if _, err := e.Lookup(v.ctx, meta.RootIno, "keep"); err != nil {
		t.Fatalf("forced format lost the tree: %v", err)
	}
}

func testNamespace(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	before := v.attr(meta.RootIno)
	time.Sleep(time.Millisecond)
	f := v.file(meta.RootIno, "f")
	if f.Attr.Type != meta.TypeFile || f.Attr.Nlink != 1 || f.Attr.Mode != 0o644 || f.Attr.Length != 0 {
		t.Fatalf("new file attr %+v", f.Attr)
	}
	root := v.attr(meta.RootIno)
	if root.Mtime <= before.Mtime || root.Ctime <= before.Ctime {
		t.Fatalf("parent times not updated: %+v -> %+v", before, root)
	}
	got, err := v.e.Lookup(v.ctx, meta.RootIno, "f")
	v.check(err, "lookup")
	if got.Ino != f.Ino || got.Attr != f.Attr {
		t.Fatalf("lookup %+v, want %+v", got, f)
	}
	d := v.dir(meta.RootIno, "d")
	if d.Attr.Nlink != 2 || d.Attr.Parent != meta.RootIno || v.attr(meta.RootIno).Nlink != 3 {
		t.Fatalf("mkdir link counts: dir %d root %d", d.Attr.Nlink, v.attr(meta.RootIno).Nlink)
	}
	sl := v.mk(d.Ino, "link", meta.TypeSymlink, 0o777)
	target, err := v.e.Readlink(v.ctx, sl.Ino)
	v.check(err, "readlink")
	if target != "target-of-link" || sl.Attr.Length != uint64(len(target)) {
		t.Fatalf("symlink %q length %d", target, sl.Attr.Length)
	}
	_, err = v.e.Readlink(v.ctx, f.Ino)
	v.wantErrno(err, syscall.EINVAL, "readlink of a file")
	for _, typ := range []meta.Type{meta.TypeFIFO, meta.TypeSocket, meta.TypeCharDev} {
		ent, err := v.e.Mknod(v.ctx, meta.MknodRequest{Parent: d.Ino, Name: "node" + string(rune('0'+typ)), Type: typ, Mode: 0o600, Rdev: 0x0102, Exclusive: true})
		v.check(err, "mknod special")
		if ent.Attr.Type != typ || (typ == meta.TypeCharDev && ent.Attr.Rdev != 0x0102) {
			t.Fatalf("special node attr %+v", ent.Attr)
		}
	}
	if names := v.names(meta.RootIno); !slices.Equal(names, []string{"d", "f"}) {
		t.Fatalf("readdir root: %v", names)
	}
	testMknodErrors(v, f, d)
	testLink(v, f, d)
	testReaddirPlus(v, d)
}

func testMknodErrors(v *env, f, d meta.Entry) {
	mk := func(parent meta.Ino, name string, typ meta.Type, excl bool) (meta.Entry, error) {
		return v.e.Mknod(v.ctx, meta.MknodRequest{Parent: parent, Name: name, Type: typ, Mode: 0o644, Exclusive: excl})
	}
	_, err := mk(meta.RootIno, "f", meta.TypeFile, true)
	v.wantErrno(err, syscall.EEXIST, "exclusive create of existing file")
	ent, err := mk(meta.RootIno, "f", meta.TypeFile, false)
	v.check(err, "open-create of existing file")
	if ent.Ino != f.Ino {
		v.t.Fatalf("non-exclusive create returned ino %d, want %d", ent.Ino, f.Ino)
	}
	_, err = mk(meta.RootIno, "d", meta.TypeFile, false)
	v.wantErrno(err, syscall.EISDIR, "open-create over a directory")
	_, err = mk(meta.RootIno, "d", meta.TypeDir, false)
	v.wantErrno(err, syscall.EEXIST, "mkdir over a directory")
	_, err = mk(meta.RootIno, strings.Repeat("n", meta.MaxNameLen+1), meta.TypeFile, true)
	v.wantErrno(err, syscall.ENAMETOOLONG, "long name")
	_, err = mk(meta.RootIno, strings.Repeat("n", meta.MaxNameLen), meta.TypeFile, true)
	v.check(err, "name of MaxNameLen")
	_, err = mk(f.Ino, "x", meta.TypeFile, true)
	v.wantErrno(err, syscall.ENOTDIR, "create in a file")
	_, err = mk(9999999, "x", meta.TypeFile, true)
	v.wantErrno(err, syscall.ENOENT, "create in missing dir")
	_, err = v.e.Lookup(v.ctx, meta.RootIno, "missing")
	v.wantErrno(err, syscall.ENOENT, "lookup missing")
	_, err = v.e.Lookup(v.ctx, f.Ino, "x")
	v.wantErrno(err, syscall.ENOTDIR, "lookup in a file")
	_, err = v.e.Lookup(v.ctx, 9999999, "x")
	v.wantErrno(err, syscall.ENOENT, "lookup in missing dir")
	_, err = v.e.Lookup(v.ctx, meta.RootIno, strings.Repeat("n", meta.MaxNameLen+1))
	v.wantErrno(err, syscall.ENAMETOOLONG, "lookup long name")
	_, err = v.e.Getattr(v.ctx, 9999999)
	v.wantErrno(err, syscall.ENOENT, "getattr missing")
	_, err = v.e.Readdir(v.ctx, f.Ino, "", 10, false)
	v.wantErrno(err, syscall.ENOTDIR, "readdir of a file")
	_, err = v.e.Readdir(v.ctx, 9999999, "", 10, false)
	v.wantErrno(err, syscall.ENOENT, "readdir of missing dir")
	_, err = v.e.Mknod(v.ctx, meta.MknodRequest{Parent: d.Ino, Name: "s", Type: meta.TypeSymlink, Target: strings.Repeat("t", meta.MaxSymlinkLen+1)})
	v.wantErrno(err, syscall.ENAMETOOLONG, "long symlink target")
}

func testLink(v *env, f, d meta.Entry) {
	before := v.attr(f.Ino)
	time.Sleep(time.Millisecond)
	ent, err := v.e.Link(v.ctx, f.Ino, d.Ino, "hard")
	v.check(err, "link")
	if ent.Ino != f.Ino || ent.Attr.Nlink != 2 || ent.Attr.Ctime <= before.Ctime {
		v.t.Fatalf("link attr %+v (before %+v)", ent.Attr, before)
	}
	got, err := v.e.Lookup(v.ctx, d.Ino, "hard")
	v.check(err, "lookup link")
	if got.Ino != f.Ino {
		v.t.Fatalf("link points to %d", got.Ino)
	}
	_, err = v.e.Link(v.ctx, d.Ino, meta.RootIno, "dirlink")
	v.wantErrno(err, syscall.EPERM, "link a directory")
	_, err = v.e.Link(v.ctx, f.Ino, d.Ino, "hard")
	v.wantErrno(err, syscall.EEXIST, "link onto existing name")
	_, err = v.e.Link(v.ctx, f.Ino, f.Ino, "x")
	v.wantErrno(err, syscall.ENOTDIR, "link into a file")
	_, err = v.e.Link(v.ctx, 9999999, d.Ino, "x")
	v.wantErrno(err, syscall.ENOENT, "link missing inode")
}

func testReaddirPlus(v *env, d meta.Entry) {
	ents, err := v.e.Readdir(v.ctx, d.Ino, "", 0, true)
	v.check(err, "readdir plus")
	if len(ents) == 0 {
		v.t.Fatal("readdir plus: no entries")
	}
	for _, de := range ents {
		if de.Attr == nil {
			v.t.Fatalf("entry %q without attr", de.Name)
		}
		if want := v.attr(de.Ino); *de.Attr != want || de.Type != want.Type {
			v.t.Fatalf("entry %q attr %+v type %v, want %+v", de.Name, *de.Attr, de.Type, want)
		}
	}
	ents, err = v.e.Readdir(v.ctx, d.Ino, "", 0, false)
	v.check(err, "readdir")
	for _, de := range ents {
		if de.Attr != nil {
			v.t.Fatalf("plain readdir entry %q has attr", de.Name)
		}
	}
}

func testRemove(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	d := v.dir(meta.RootIno, "d")
	f := v.file(d.Ino, "f")
	sub := v.dir(d.Ino, "sub")
	v.wantErrno(v.e.Rmdir(v.ctx, meta.RootIno, "d"), syscall.ENOTEMPTY, "rmdir non-empty")
	v.wantErrno(v.e.Rmdir(v.ctx, d.Ino, "f"), syscall.ENOTDIR, "rmdir a file")
	v.wantErrno(v.e.Rmdir(v.ctx, d.Ino, "missing"), syscall.ENOENT, "rmdir missing")
	_, err := v.e.Unlink(v.ctx, d.Ino, "sub")
	v.wantErrno(err, syscall.EISDIR, "unlink a directory")
	_, err = v.e.Unlink(v.ctx, d.Ino, "missing")
	v.wantErrno(err, syscall.ENOENT, "unlink missing")
	_, err = v.e.Unlink(v.ctx, f.Ino, "x")
	v.wantErrno(err, syscall.ENOTDIR, "unlink in a file")

	_, err = v.e.Link(v.ctx, f.Ino, d.Ino, "f2")
	v.check(err, "link")
	rm, err := v.e.Unlink(v.ctx, d.Ino, "f")
	v.check(err, "unlink one of two links")
	if rm.Orphan || rm.Ino != f.Ino || rm.Attr.Nlink != 1 {
		t.Fatalf("unlink of linked file: %+v", rm)
	}
	s := v.write(f.Ino, 0, 100)
	rm, err = v.e.Unlink(v.ctx, d.Ino, "f2")
	v.check(err, "unlink last link")
	if !rm.Orphan || rm.Attr.Nlink != 0 {
		t.Fatalf("unlink of last link: %+v", rm)
	}
	if a := v.attr(f.Ino); a.Nlink != 0 || a.Length != 100 {
		t.Fatalf("orphan attr %+v", a)
	}
	if got := v.view(f.Ino, 0, 0, 100); len(got) != 1 || got[0].ID != s.ID {
		t.Fatalf("orphan lost its data: %v", got)
	}
	if _, ok := v.freed()[s.ID]; ok {
		t.Fatal("orphan's slice freed before purge")
	}
	v.check(v.e.Purge(v.ctx, f.Ino), "purge")
	if size, ok := v.freed()[s.ID]; !ok || size != 100 {
		t.Fatalf("purged slice not freed: %v", v.freed())
	}
	_, err = v.e.Getattr(v.ctx, f.Ino)
	v.wantErrno(err, syscall.ENOENT, "getattr after purge")
	v.check(v.e.Purge(v.ctx, f.Ino), "purge again")
	v.check(v.e.Purge(v.ctx, sub.Ino), "purge of a linked inode is a no-op")
	v.attr(sub.Ino)
	v.check(v.e.ForgetFreed(v.ctx, []meta.SliceID{s.ID}), "forget freed")
	v.check(v.e.ForgetFreed(v.ctx, []meta.SliceID{s.ID}), "forget freed again")
	if len(v.freed()) != 0 {
		t.Fatalf("freed list after forget: %v", v.freed())
	}

	sl := v.mk(d.Ino, "sl", meta.TypeSymlink, 0o777)
	rm, err = v.e.Unlink(v.ctx, d.Ino, "sl")
	v.check(err, "unlink symlink")
	if rm.Orphan {
		t.Fatal("symlink became an orphan")
	}
	_, err = v.e.Getattr(v.ctx, sl.Ino)
	v.wantErrno(err, syscall.ENOENT, "symlink deleted at once")

	dirBefore := v.attr(d.Ino)
	v.check(v.e.Rmdir(v.ctx, d.Ino, "sub"), "rmdir")
	if a := v.attr(d.Ino); a.Nlink != dirBefore.Nlink-1 || a.Mtime < dirBefore.Mtime {
		t.Fatalf("parent after rmdir %+v (before %+v)", a, dirBefore)
	}
	v.check(v.e.Rmdir(v.ctx, meta.RootIno, "d"), "rmdir now empty")
	if a := v.attr(meta.RootIno); a.Nlink != 2 {
		t.Fatalf("root nlink %d after removing its subdir", a.Nlink)
	}
	if names := v.names(meta.RootIno); len(names) != 0 {
		t.Fatalf("root not empty: %v", names)
	}
}

// testFreedPaging: FreedSlices lists in ID order, pages with after (a
// caller reads a long list in short engine calls), and a page never
// exceeds its limit.
func testFreedPaging(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	want := map[meta.SliceID]uint32{}
	for i := range 7 {
		name := fmt.Sprint("f", i)
		f := v.mk(meta.RootIno, name, meta.TypeFile, 0o644)
		for j := range 2 {
			s := v.write(f.Ino, uint64(j)*4096, uint32(100+i))
			want[s.ID] = s.Size
		}
		rm, err := v.e.Unlink(v.ctx, meta.RootIno, name)
		v.check(err, "unlink")
		if rm.Orphan {
			v.check(v.e.Purge(v.ctx, f.Ino), "purge")
		}
	}
	all, err := v.e.FreedSlices(v.ctx, 0, 0)
	v.check(err, "freed slices")
	if len(all) != len(want) {
		t.Fatalf("freed list %v, want the %d slices %v", all, len(want), want)
	}
	for _, limit := range []int{1, 3, len(want), len(want) + 5} {
		var got []meta.Slice
		var after meta.SliceID
		for pages := 0; ; pages++ {
			if pages > len(want)+1 {
				t.Fatalf("limit %d: paging does not end: %v", limit, got)
			}
			page, err := v.e.FreedSlices(v.ctx, after, limit)
			v.check(err, "freed slices page")
			if len(page) > limit {
				t.Fatalf("limit %d after %d: %d slices", limit, after, len(page))
			}
			got = append(got, page...)
			if len(page) < limit {
				break
			}
			after = page[len(page)-1].ID
		}
		if len(got) != len(want) {
			t.Fatalf("limit %d: paged %v, want %v", limit, got, want)
		}
		for i, s := range got {
			if size, ok := want[s.ID]; !ok || size != s.Size {
				t.Fatalf("limit %d: paged %v, want %v", limit, got, want)
			}
			if i > 0 && got[i-1].ID >= s.ID {
				t.Fatalf("limit %d: not in ID order: %v", limit, got)
			}
		}
	}
	last := all[len(all)-1].ID
	if page, err := v.e.FreedSlices(v.ctx, last, 0); err != nil || len(page) != 0 {
		t.Fatalf("after the last freed slice: %v, %v", page, err)
	}
	if page, err := v.e.FreedSlices(v.ctx, all[0].ID, 1); err != nil || len(page) != 1 || page[0].ID != all[1].ID {
		t.Fatalf("after the first freed slice: %v, %v; want %v", page, err, all[1])
	}
}
