package metatest

import (
	"slices"
	"syscall"
	"testing"
	"time"

	"shoal/internal/meta"
)

func (v *env) rename(op, np meta.Ino, on, nn string, flags uint32) (meta.Removed, error) {
	return v.e.Rename(v.ctx, meta.RenameRequest{OldParent: op, OldName: on, NewParent: np, NewName: nn, Flags: flags})
}

func testRename(t *testing.T, newEngine Factory) {
	t.Run("Basic", func(t *testing.T) { testRenameBasic(open(t, newEngine)) })
	t.Run("Errors", func(t *testing.T) { testRenameErrors(open(t, newEngine)) })
	t.Run("Replace", func(t *testing.T) { testRenameReplace(open(t, newEngine)) })
	t.Run("Exchange", func(t *testing.T) { testRenameExchange(open(t, newEngine)) })
}

func testRenameBasic(v *env) {
	a, b := v.dir(meta.RootIno, "a"), v.dir(meta.RootIno, "b")
	f := v.file(a.Ino, "f")
	before := v.attr(f.Ino)
	time.Sleep(time.Millisecond)
	_, err := v.rename(a.Ino, a.Ino, "f", "g", 0)
	v.check(err, "rename within a dir")
	if names := v.names(a.Ino); !slices.Equal(names, []string{"g"}) {
		v.t.Fatalf("after rename: %v", names)
	}
	if got := v.attr(f.Ino); got.Ctime <= before.Ctime {
		v.t.Fatal("rename did not change the inode's ctime")
	}
	_, err = v.rename(a.Ino, b.Ino, "g", "h", 0)
	v.check(err, "rename across dirs")
	ent, err := v.e.Lookup(v.ctx, b.Ino, "h")
	v.check(err, "lookup moved file")
	if ent.Ino != f.Ino {
		v.t.Fatalf("moved file has ino %d", ent.Ino)
	}
	sub := v.dir(a.Ino, "sub")
	v.file(sub.Ino, "inner")
	_, err = v.rename(a.Ino, b.Ino, "sub", "sub2", 0)
	v.check(err, "move a directory")
	if got := v.attr(sub.Ino); got.Parent != b.Ino {
		v.t.Fatalf("moved dir parent %d, want %d", got.Parent, b.Ino)
	}
	if na, nb := v.attr(a.Ino).Nlink, v.attr(b.Ino).Nlink; na != 2 || nb != 3 {
		v.t.Fatalf("nlink after dir move: a=%d b=%d", na, nb)
	}
	if _, err := v.e.Lookup(v.ctx, sub.Ino, "inner"); err != nil {
		v.t.Fatalf("moved dir lost its contents: %v", err)
	}
	// Renaming a name onto another link of the same inode does nothing.
	_, err = v.e.Link(v.ctx, f.Ino, b.Ino, "h2")
	v.check(err, "link")
	_, err = v.rename(b.Ino, b.Ino, "h", "h2", 0)
	v.check(err, "rename onto own hard link")
	if names := v.names(b.Ino); !slices.Equal(names, []string{"h", "h2", "sub2"}) {
		v.t.Fatalf("after rename onto hard link: %v", names)
	}
	_, err = v.rename(b.Ino, b.Ino, "h", "h", 0)
	v.check(err, "rename onto itself")
	_, err = v.rename(b.Ino, b.Ino, "h", "h2", meta.RenameNoReplace)
	v.wantErrno(err, syscall.EEXIST, "noreplace onto own hard link")
}

func testRenameErrors(v *env) {
	a := v.dir(meta.RootIno, "a")
	sub := v.dir(a.Ino, "sub")
	deep := v.dir(sub.Ino, "deep")
	f := v.file(meta.RootIno, "f")
	v.file(meta.RootIno, "g")
	full := v.dir(meta.RootIno, "full")
	v.file(full.Ino, "x")
	v.dir(meta.RootIno, "empty")
	cases := []struct {
		name   string
		op, np meta.Ino
		on, nn string
		flags  uint32
		want   syscall.Errno
	}{
		{"missing source", meta.RootIno, meta.RootIno, "nope", "x", 0, syscall.ENOENT},
		{"into own subtree", meta.RootIno, deep.Ino, "a", "x", 0, syscall.EINVAL},
		{"into itself", meta.RootIno, a.Ino, "a", "x", 0, syscall.EINVAL},
		{"dir over file", meta.RootIno, meta.RootIno, "a", "f", 0, syscall.ENOTDIR},
		{"file over dir", meta.RootIno, meta.RootIno, "f", "empty", 0, syscall.EISDIR},
		{"dir over non-empty dir", meta.RootIno, meta.RootIno, "a", "full", 0, syscall.ENOTEMPTY},
		{"noreplace", meta.RootIno, meta.RootIno, "f", "g", meta.RenameNoReplace, syscall.EEXIST},
		{"exchange missing", meta.RootIno, meta.RootIno, "f", "nope", meta.RenameExchange, syscall.ENOENT},
		{"whiteout", meta.RootIno, meta.RootIno, "f", "w", meta.RenameWhiteout, syscall.EINVAL},
		{"exchange into own subtree", meta.RootIno, sub.Ino, "a", "deep", meta.RenameExchange, syscall.EINVAL},
		{"parent not a dir", f.Ino, meta.RootIno, "x", "y", 0, syscall.ENOTDIR},
		{"target parent not a dir", meta.RootIno, f.Ino, "g", "y", 0, syscall.ENOTDIR},
		{"long name", meta.RootIno, meta.RootIno, "f", string(make([]byte, 300)), 0, syscall.ENAMETOOLONG},
	}
	for _, c := range cases {
		_, err := v.rename(c.op, c.np, c.on, c.nn, c.flags)
		v.wantErrno(err, c.want, "rename "+c.name)
	}
	if names := v.names(meta.RootIno); !slices.Equal(names, []string{"a", "empty", "f", "full", "g"}) {
		v.t.Fatalf("failed renames changed the tree: %v", names)
	}
	_, err := v.rename(meta.RootIno, meta.RootIno, "f", "fresh", meta.RenameNoReplace)
	v.check(err, "noreplace to a free name")
}

func testRenameReplace(v *env) {
	f, g := v.file(meta.RootIno, "f"), v.file(meta.RootIno, "g")
	s := v.write(g.Ino, 0, 10)
	rm, err := v.rename(meta.RootIno, meta.RootIno, "f", "g", 0)
	v.check(err, "rename over file")
	if rm.Ino != g.Ino || !rm.Orphan {
		v.t.Fatalf("replaced file report %+v", rm)
	}
	if ent, _ := v.e.Lookup(v.ctx, meta.RootIno, "g"); ent.Ino != f.Ino {
		v.t.Fatalf("g now points to %d", ent.Ino)
	}
	v.check(v.e.Purge(v.ctx, g.Ino), "purge replaced")
	if _, ok := v.freed()[s.ID]; !ok {
		v.t.Fatal("replaced file's slice not freed after purge")
	}
	// A replaced file with another link is not an orphan.
	h := v.file(meta.RootIno, "h")
	_, err = v.e.Link(v.ctx, h.Ino, meta.RootIno, "h2")
	v.check(err, "link")
	rm, err = v.rename(meta.RootIno, meta.RootIno, "g", "h", 0)
	v.check(err, "rename over linked file")
	if rm.Orphan || rm.Attr.Nlink != 1 {
		v.t.Fatalf("replaced linked file report %+v", rm)
	}
	// A directory over an empty directory in another parent.
	a, b := v.dir(meta.RootIno, "a"), v.dir(meta.RootIno, "b")
	src := v.dir(a.Ino, "src")
	dst := v.dir(b.Ino, "dst")
	_, err = v.rename(a.Ino, b.Ino, "src", "dst", 0)
	v.check(err, "dir over empty dir")
	if _, err := v.e.Getattr(v.ctx, dst.Ino); !isErrno(err, syscall.ENOENT) {
		v.t.Fatalf("replaced dir still exists: %v", err)
	}
	if na, nb := v.attr(a.Ino).Nlink, v.attr(b.Ino).Nlink; na != 2 || nb != 3 {
		v.t.Fatalf("nlink after dir replace: a=%d b=%d", na, nb)
	}
	if got := v.attr(src.Ino); got.Parent != b.Ino {
		v.t.Fatalf("parent %d", got.Parent)
	}
}

func testRenameExchange(v *env) {
	a, b := v.dir(meta.RootIno, "a"), v.dir(meta.RootIno, "b")
	f := v.file(a.Ino, "f")
	d := v.dir(b.Ino, "d")
	_, err := v.rename(a.Ino, b.Ino, "f", "d", meta.RenameExchange)
	v.check(err, "exchange file and dir")
	if ent, _ := v.e.Lookup(v.ctx, a.Ino, "f"); ent.Ino != d.Ino || ent.Attr.Type != meta.TypeDir {
		v.t.Fatalf("a/f is %+v", ent)
	}
	if ent, _ := v.e.Lookup(v.ctx, b.Ino, "d"); ent.Ino != f.Ino {
		v.t.Fatalf("b/d is %+v", ent)
	}
	if got := v.attr(d.Ino); got.Parent != a.Ino {
		v.t.Fatalf("exchanged dir parent %d", got.Parent)
	}
	if na, nb := v.attr(a.Ino).Nlink, v.attr(b.Ino).Nlink; na != 3 || nb != 2 {
		v.t.Fatalf("nlink after exchange: a=%d b=%d", na, nb)
	}
	ents, err := v.e.Readdir(v.ctx, a.Ino, "", 0, false)
	v.check(err, "readdir")
	if len(ents) != 1 || ents[0].Type != meta.TypeDir {
		v.t.Fatalf("readdir type after exchange: %+v", ents)
	}
}
