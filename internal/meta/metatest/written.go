package metatest

import (
	"context"
	"slices"
	"syscall"
	"testing"

	"shoal/internal/meta"
)

// testWritten: what an engine reports through meta.Written is what it
// committed: the attributes of every inode a change wrote, as a later
// Getattr reads them, and the inodes it deleted; nothing for a change
// that failed. Engines that report nothing are skipped.
func testWritten(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	d, e := v.dir(meta.RootIno, "d"), v.dir(meta.RootIno, "e")
	written := func() (*meta.Written, context.Context) {
		w := &meta.Written{}
		return w, meta.WithWritten(v.ctx, w)
	}
	// same checks that w holds, for each of inos, what Getattr reads now.
	same := func(what string, w *meta.Written, inos ...meta.Ino) {
		t.Helper()
		for _, ino := range inos {
			got, ok := w.Attr(ino)
			if !ok {
				t.Errorf("%s: inode %d not reported (reported %v)", what, ino, w.Inos())
				continue
			}
			if want := v.attr(ino); got != want {
				t.Errorf("%s: inode %d reported %+v, committed %+v", what, ino, got, want)
			}
		}
	}

	w, ctx := written()
	f, err := v.e.Mknod(ctx, meta.MknodRequest{Parent: d.Ino, Name: "f", Type: meta.TypeFile, Mode: 0o644, Exclusive: true})
	v.check(err, "mknod")
	if len(w.Inos()) == 0 {
		t.Skip("the engine reports nothing through meta.Written")
	}
	same("create", w, d.Ino, f.Ino)

	w, ctx = written()
	s, err := v.e.Mknod(ctx, meta.MknodRequest{Parent: d.Ino, Name: "s", Type: meta.TypeDir, Mode: 0o755, Exclusive: true})
	v.check(err, "mkdir")
	same("mkdir", w, d.Ino, s.Ino)

	w, ctx = written()
	_, err = v.e.Mknod(ctx, meta.MknodRequest{Parent: d.Ino, Name: "f", Type: meta.TypeFile, Mode: 0o644, Exclusive: true})
	v.wantErrno(err, syscall.EEXIST, "create over an existing name")
	if inos := w.Inos(); len(inos) != 0 {
		t.Errorf("a failed create reported %v", inos)
	}

	w, ctx = written()
	_, err = v.e.Rename(ctx, meta.RenameRequest{OldParent: d.Ino, OldName: "s", NewParent: e.Ino, NewName: "s"})
	v.check(err, "rename")
	same("rename of a directory", w, d.Ino, e.Ino, s.Ino)

	w, ctx = written()
	_, err = v.e.Link(ctx, f.Ino, e.Ino, "l")
	v.check(err, "link")
	same("link", w, e.Ino, f.Ino)

	w, ctx = written()
	_, err = v.e.Unlink(ctx, d.Ino, "f")
	v.check(err, "unlink")
	same("unlink", w, d.Ino, f.Ino)

	w, ctx = written()
	v.check(v.e.Rmdir(ctx, e.Ino, "s"), "rmdir")
	same("rmdir", w, e.Ino)
	if !slices.Contains(w.Inos(), s.Ino) {
		t.Errorf("rmdir did not report the removed directory %d (reported %v)", s.Ino, w.Inos())
	}
	if _, ok := w.Attr(s.Ino); ok {
		t.Errorf("rmdir reported attributes of the removed directory %d", s.Ino)
	}
}
