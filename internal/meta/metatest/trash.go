package metatest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"shoal/internal/meta"
)

// openTrash makes a fresh engine with the trash on (one day), skipping
// engines that keep no trash.
func openTrash(t *testing.T, newEngine Factory, days int) (*env, meta.Trash) {
	t.Helper()
	v := openLimited(t, newEngine, meta.Format{TrashDays: days})
	tr, ok := v.e.(meta.Trash)
	if !ok {
		t.Skip("engine keeps no trash")
	}
	return v, tr
}

// trashEntries lists the trash, failing the test on error.
func (v *env) trashEntries(tr meta.Trash) []meta.TrashEntry {
	v.t.Helper()
	ents, err := tr.ListTrash(v.ctx)
	v.check(err, "list trash")
	return ents
}

// trashDir returns /.trash's entry.
func (v *env) trashDir() meta.Entry {
	v.t.Helper()
	ent, err := v.e.Lookup(v.ctx, meta.RootIno, meta.TrashName)
	v.check(err, "lookup /.trash")
	return ent
}

// testTrash: with TrashDays set, the last unlink (or a rename over) of a
// file or symlink moves it to /.trash/HOUR/<parent>-<ino>-<name> with its
// data and usage; other links, other types and unlinks inside the trash
// delete; nothing can be created there; restore puts files back (under
// another name when the old one is taken or the directory gone); empty
// frees the data. With the trash off nothing goes there.
func testTrash(t *testing.T, newEngine Factory) {
	t.Run("Off", func(t *testing.T) {
		v, _ := openTrash(t, newEngine, 0)
		f := v.file(meta.RootIno, "f")
		s := v.write(f.Ino, 0, 4096)
		rm, err := v.e.Unlink(v.ctx, meta.RootIno, "f")
		v.check(err, "unlink")
		v.check(v.e.Purge(v.ctx, rm.Ino), "purge")
		v.wantFreed(s, true)
		_, err = v.e.Lookup(v.ctx, meta.RootIno, meta.TrashName)
		v.wantErrno(err, syscall.ENOENT, "lookup /.trash with the trash off")
	})
	t.Run("Unlink", func(t *testing.T) { testTrashUnlink(t, newEngine) })
	t.Run("Restore", func(t *testing.T) { testTrashRestore(t, newEngine) })
	t.Run("Empty", func(t *testing.T) { testTrashEmpty(t, newEngine) })
	t.Run("Dump", func(t *testing.T) { testTrashDump(t, newEngine) })
	t.Run("Days", func(t *testing.T) {
		v, tr := openTrash(t, newEngine, 0)
		v.check(tr.SetTrashDays(v.ctx, 3), "set trash days")
		f, err := v.e.Load(v.ctx)
		v.check(err, "load")
		if f.TrashDays != 3 || f.Name != "quota" {
			t.Fatalf("settings after SetTrashDays(3): %+v", f)
		}
		v.file(meta.RootIno, "f")
		_, err = v.e.Unlink(v.ctx, meta.RootIno, "f")
		v.check(err, "unlink")
		if n := len(v.trashEntries(tr)); n != 1 {
			t.Fatalf("%d entries in the trash after turning it on and one unlink", n)
		}
	})
}

func testTrashUnlink(t *testing.T, newEngine Factory) {
	v, tr := openTrash(t, newEngine, 1)
	d := v.dir(meta.RootIno, "d")
	f := v.file(d.Ino, "f")
	s := v.write(f.Ino, 0, 8192)
	sym := v.mk(d.Ino, "sym", meta.TypeSymlink, 0o777)
	linked := v.file(d.Ino, "linked")
	_, err := v.e.Link(v.ctx, linked.Ino, meta.RootIno, "other")
	v.check(err, "link")
	fifo := v.mk(d.Ino, "fifo", meta.TypeFIFO, 0o644)
	over := v.file(d.Ino, "over")
	v.write(over.Ino, 0, 4096)
	v.file(d.Ino, "new")
	before, err := v.e.Statfs(v.ctx)
	v.check(err, "statfs")

	for _, name := range []string{"f", "sym", "linked", "fifo"} {
		rm, err := v.e.Unlink(v.ctx, d.Ino, name)
		v.check(err, "unlink "+name)
		if rm.Orphan {
			v.check(v.e.Purge(v.ctx, rm.Ino), "purge")
		}
	}
	_, err = v.rename(d.Ino, d.Ino, "new", "over", 0)
	v.check(err, "rename over")
	v.wantFreed(s, false)
	if _, err := v.e.Getattr(v.ctx, fifo.Ino); err != syscall.ENOENT {
		t.Fatalf("a FIFO went to the trash: %v", err)
	}
	if got := v.attr(linked.Ino).Nlink; got != 1 {
		t.Fatalf("a file with another link has %d links after unlink", got)
	}

	trash := v.trashDir()
	if a := trash.Attr; a.Type != meta.TypeDir || a.Mode != 0o700 || a.Uid != 0 {
		t.Fatalf("/.trash: %+v, want a directory of root, mode 0700", a)
	}
	hour := time.Now().UTC().Format(meta.TrashHourLayout)
	ents := v.trashEntries(tr)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name)
		if e.Hour != hour && e.Hour != time.Now().Add(-time.Minute).UTC().Format(meta.TrashHourLayout) {
			t.Errorf("entry %s in hour %s, now is %s", e.Name, e.Hour, hour)
		}
		if e.Parent != d.Ino {
			t.Errorf("entry %s: parent %d, want %d", e.Name, e.Parent, d.Ino)
		}
	}
	want := []string{fmt.Sprintf("%d-%d-f", d.Ino, f.Ino), fmt.Sprintf("%d-%d-over", d.Ino, over.Ino), fmt.Sprintf("%d-%d-sym", d.Ino, sym.Ino)}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("trash holds %v, want %v", names, want)
	}
	if a := v.attr(f.Ino); a.Nlink != 1 || a.Length != 8192 {
		t.Fatalf("trashed file: %+v", a)
	}
	after, err := v.e.Statfs(v.ctx)
	v.check(err, "statfs")
	if after.UsedSpace != before.UsedSpace {
		t.Fatalf("used space %d after trashing, %d before: the trash must count", after.UsedSpace, before.UsedSpace)
	}

	hourEnt, err := v.e.Lookup(v.ctx, trash.Ino, ents[0].Hour)
	v.check(err, "lookup hour")
	for _, typ := range []meta.Type{meta.TypeFile, meta.TypeDir} {
		_, err = v.e.Mknod(v.ctx, meta.MknodRequest{Parent: hourEnt.Ino, Name: "x", Type: typ, Mode: 0o644, Exclusive: true})
		v.wantErrno(err, syscall.EPERM, "mknod in the trash")
		_, err = v.e.Mknod(v.ctx, meta.MknodRequest{Parent: trash.Ino, Name: "x", Type: typ, Mode: 0o644, Exclusive: true})
		v.wantErrno(err, syscall.EPERM, "mknod in /.trash")
	}
	_, err = v.e.Link(v.ctx, linked.Ino, hourEnt.Ino, "x")
	v.wantErrno(err, syscall.EPERM, "link into the trash")
	_, err = v.rename(meta.RootIno, hourEnt.Ino, "other", "x", 0)
	v.wantErrno(err, syscall.EPERM, "rename into the trash")

	if ck, ok := v.e.(meta.Checker); ok {
		rep, err := ck.Check(v.ctx, false)
		v.check(err, "check")
		if len(rep.Problems) > 0 {
			t.Fatalf("check of a volume with a trash: %v", rep.Problems)
		}
	}
	// Unlink inside the trash deletes for good.
	rm, err := v.e.Unlink(v.ctx, hourEnt.Ino, fmt.Sprintf("%d-%d-f", d.Ino, f.Ino))
	v.check(err, "unlink in the trash")
	if rm.Orphan {
		v.check(v.e.Purge(v.ctx, rm.Ino), "purge")
	}
	v.wantFreed(s, true)
	if n := len(v.trashEntries(tr)); n != 2 {
		t.Fatalf("%d entries after a delete in the trash, want 2", n)
	}
}

func testTrashRestore(t *testing.T, newEngine Factory) {
	v, tr := openTrash(t, newEngine, 1)
	d := v.dir(meta.RootIno, "d")
	f := v.file(d.Ino, "f")
	s := v.write(f.Ino, 0, 8192)
	g := v.file(d.Ino, "g")
	long := v.file(d.Ino, strings.Repeat("é", 127))
	e := v.dir(meta.RootIno, "e")
	h := v.file(e.Ino, "h")
	for _, x := range []struct {
		dir  meta.Ino
		name string
	}{{d.Ino, "f"}, {d.Ino, "g"}, {d.Ino, strings.Repeat("é", 127)}, {e.Ino, "h"}} {
		_, err := v.e.Unlink(v.ctx, x.dir, x.name)
		v.check(err, "unlink "+x.name)
	}
	v.check(v.e.Rmdir(v.ctx, meta.RootIno, "e"), "rmdir e")
	v.file(d.Ino, "g") // takes g's name

	byIno := map[meta.Ino]meta.TrashEntry{}
	for _, te := range v.trashEntries(tr) {
		if len(te.Name) > meta.MaxNameLen {
			t.Fatalf("entry name of %d bytes", len(te.Name))
		}
		byIno[te.Ino] = te
	}
	restore := func(ino meta.Ino) meta.Restored {
		t.Helper()
		te, ok := byIno[ino]
		if !ok {
			t.Fatalf("inode %d is not in the trash", ino)
		}
		r, err := tr.RestoreTrash(v.ctx, te.Hour, te.Name)
		v.check(err, "restore "+te.Name)
		return r
	}
	if r := restore(f.Ino); r.Moved || r.Parent != d.Ino || r.Name != "f" {
		t.Fatalf("restore of f: %+v", r)
	}
	ent, err := v.e.Lookup(v.ctx, d.Ino, "f")
	v.check(err, "lookup restored f")
	if ent.Ino != f.Ino || ent.Attr.Length != 8192 || ent.Attr.Parent != d.Ino {
		t.Fatalf("restored f: %+v", ent)
	}
	v.wantView(f.Ino, 0, 0, 8192, s)
	if r := restore(g.Ino); !r.Moved || r.Parent != d.Ino || r.Name != fmt.Sprintf("g.restored-%d", g.Ino) {
		t.Fatalf("restore of g over a taken name: %+v", r)
	}
	if r := restore(h.Ino); !r.Moved || r.Parent != meta.RootIno || r.Name != "h.restored-"+fmt.Sprint(h.Ino) || r.Reason == "" {
		t.Fatalf("restore of h, its directory gone: %+v", r)
	}
	if te := byIno[long.Ino]; te.OrigName != strings.Repeat("é", 127) {
		t.Fatalf("trash list of a long name: %d bytes %q", len(te.OrigName), te.OrigName)
	}
	r := restore(long.Ino)
	if r.Moved || r.Parent != d.Ino || r.Name != strings.Repeat("é", 127) {
		t.Fatalf("restore of a long name (cut in its trash entry): %+v", r)
	}
	if names, err := v.e.Listxattr(v.ctx, long.Ino); err != nil || len(names) != 0 {
		t.Fatalf("xattrs of the restored long name: %q, %v", names, err)
	}
	if n := len(v.trashEntries(tr)); n != 0 {
		t.Fatalf("%d entries left after restoring all", n)
	}
	_, err = tr.RestoreTrash(v.ctx, "2000-01-01-00", "1-2-x")
	v.wantErrno(err, syscall.ENOENT, "restore of a missing entry")
}

func testTrashEmpty(t *testing.T, newEngine Factory) {
	v, tr := openTrash(t, newEngine, 1)
	f := v.file(meta.RootIno, "f")
	s := v.write(f.Ino, 0, 8192)
	before, err := v.e.Statfs(v.ctx)
	v.check(err, "statfs")
	_, err = v.e.Unlink(v.ctx, meta.RootIno, "f")
	v.check(err, "unlink")
	n, err := tr.ExpireTrash(v.ctx, time.Now())
	v.check(err, "expire now")
	if n != 0 || len(v.trashEntries(tr)) != 1 {
		t.Fatalf("expire within a day deleted %d", n)
	}
	n, err = tr.ExpireTrash(v.ctx, time.Now().Add(25*time.Hour+time.Hour))
	v.check(err, "expire a day later")
	if n != 1 {
		t.Fatalf("expire a day later deleted %d, want 1", n)
	}
	// What is left open becomes an orphan; here nothing is, once purged.
	for _, o := range v.orphans() {
		v.check(v.e.Purge(v.ctx, o), "purge")
	}
	v.wantFreed(s, true)
	after, err := v.e.Statfs(v.ctx)
	v.check(err, "statfs")
	if after.UsedSpace >= before.UsedSpace {
		t.Fatalf("used space %d after emptying, %d before", after.UsedSpace, before.UsedSpace)
	}
	if names := v.names(v.trashDir().Ino); len(names) != 0 {
		t.Fatalf("/.trash holds %v after emptying", names)
	}
	n, err = tr.EmptyTrash(v.ctx, time.Now().Add(time.Hour))
	v.check(err, "empty again")
	if n != 0 {
		t.Fatalf("emptying an empty trash deleted %d", n)
	}
}

// orphans lists the orphans, for engines that are Scanners.
func (v *env) orphans() []meta.Ino {
	v.t.Helper()
	sc, ok := v.e.(meta.Scanner)
	if !ok {
		return nil
	}
	os, err := sc.Orphans(v.ctx, 0)
	v.check(err, "orphans")
	var out []meta.Ino
	for _, o := range os {
		out = append(out, o.Ino)
	}
	return out
}

// testTrashDump: a dump restored into another engine keeps the trash, its
// entries and its refusal of creates.
func testTrashDump(t *testing.T, newEngine Factory) {
	v, _ := openTrash(t, newEngine, 1)
	d, ok := v.e.(meta.Dumper)
	if !ok {
		t.Skip("engine has no dump")
	}
	v.file(meta.RootIno, "f")
	_, err := v.e.Unlink(v.ctx, meta.RootIno, "f")
	v.check(err, "unlink")
	var buf bytes.Buffer
	v.check(d.Dump(v.ctx, &buf), "dump")
	e2 := newEngine(t)
	t.Cleanup(func() { _ = e2.Close() })
	v.check(e2.(meta.Dumper).Restore(v.ctx, &buf), "restore")
	w := &env{t: t, e: e2, ctx: v.ctx}
	f, err := e2.Load(v.ctx)
	w.check(err, "load")
	if f.TrashDays != 1 {
		t.Fatalf("restored trash_days %d", f.TrashDays)
	}
	ents := w.trashEntries(e2.(meta.Trash))
	if len(ents) != 1 {
		t.Fatalf("restored trash holds %v", ents)
	}
	_, err = e2.Mknod(v.ctx, meta.MknodRequest{Parent: w.trashDir().Ino, Name: "x", Type: meta.TypeFile, Mode: 0o644, Exclusive: true})
	w.wantErrno(err, syscall.EPERM, "mknod in the restored /.trash")
}
