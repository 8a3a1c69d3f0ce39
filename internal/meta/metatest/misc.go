package metatest

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"sync"
	"syscall"
	"testing"

	"shoal/internal/meta"
)

func testXattr(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	f := v.file(meta.RootIno, "f")
	_, err := v.e.Getxattr(v.ctx, f.Ino, "user.a")
	v.wantErrno(err, syscall.ENODATA, "get unset")
	v.wantErrno(v.e.Removexattr(v.ctx, f.Ino, "user.a"), syscall.ENODATA, "remove unset")
	v.wantErrno(v.e.Setxattr(v.ctx, f.Ino, "user.a", []byte("x"), meta.XattrReplace), syscall.ENODATA, "replace unset")
	before := v.attr(f.Ino)
	v.check(v.e.Setxattr(v.ctx, f.Ino, "user.a", []byte("one"), meta.XattrCreate), "create")
	if v.attr(f.Ino).Ctime < before.Ctime {
		t.Fatal("setxattr did not touch ctime")
	}
	v.wantErrno(v.e.Setxattr(v.ctx, f.Ino, "user.a", []byte("x"), meta.XattrCreate), syscall.EEXIST, "create set")
	v.check(v.e.Setxattr(v.ctx, f.Ino, "user.a", []byte("two"), meta.XattrReplace), "replace")
	v.check(v.e.Setxattr(v.ctx, f.Ino, "user.b", nil, 0), "set empty value")
	v.check(v.e.Setxattr(v.ctx, f.Ino, "user.c", bytes.Repeat([]byte{0xff}, meta.MaxXattrValue), 0), "set max value")
	v.wantErrno(v.e.Setxattr(v.ctx, f.Ino, "user.d", make([]byte, meta.MaxXattrValue+1), 0), syscall.E2BIG, "oversized value")
	got, err := v.e.Getxattr(v.ctx, f.Ino, "user.a")
	v.check(err, "get")
	if string(got) != "two" {
		t.Fatalf("value %q", got)
	}
	if got, err := v.e.Getxattr(v.ctx, f.Ino, "user.b"); err != nil || len(got) != 0 {
		t.Fatalf("empty value: %q %v", got, err)
	}
	names, err := v.e.Listxattr(v.ctx, f.Ino)
	v.check(err, "list")
	sort.Strings(names)
	if !slices.Equal(names, []string{"user.a", "user.b", "user.c"}) {
		t.Fatalf("names %v", names)
	}
	v.check(v.e.Removexattr(v.ctx, f.Ino, "user.a"), "remove")
	_, err = v.e.Getxattr(v.ctx, f.Ino, "user.a")
	v.wantErrno(err, syscall.ENODATA, "get removed")
	_, err = v.e.Getxattr(v.ctx, 9999999, "user.a")
	v.wantErrno(err, syscall.ENOENT, "get on missing inode")
	_, err = v.e.Listxattr(v.ctx, 9999999)
	v.wantErrno(err, syscall.ENOENT, "list on missing inode")

	v.chown(f.Ino, alice, 0o644)
	v.wantErrno(v.e.Setxattr(v.as(carol), f.Ino, "user.z", []byte("x"), 0), syscall.EACCES, "set without write access")
	if _, err := v.e.Getxattr(v.as(carol), f.Ino, "user.b"); err != nil {
		t.Fatalf("get with read access: %v", err)
	}
	v.wantErrno(v.e.Setxattr(v.as(alice), f.Ino, "trusted.z", []byte("x"), 0), syscall.EPERM, "trusted namespace as non-root")
	v.check(v.e.Setxattr(v.ctx, f.Ino, "trusted.z", []byte("x"), 0), "trusted namespace as root")

	// Xattrs go with the inode.
	_, err = v.e.Unlink(v.ctx, meta.RootIno, "f")
	v.check(err, "unlink")
	v.check(v.e.Purge(v.ctx, f.Ino), "purge")
	g := v.file(meta.RootIno, "g")
	if names, _ := v.e.Listxattr(v.ctx, g.Ino); len(names) != 0 {
		t.Fatalf("fresh inode has xattrs %v", names)
	}
}

func testStatfs(t *testing.T, newEngine Factory) {
	e := newEngine(t)
	defer e.Close()
	v := &env{t: t, e: e, ctx: t.Context()}
	v.check(e.Format(v.ctx, meta.Format{Name: "s", Capacity: 1 << 30, Inodes: 500}, false), "format")
	st, err := e.Statfs(v.ctx)
	v.check(err, "statfs")
	if st.TotalSpace != 1<<30 || st.TotalInodes != 500 || st.UsedInodes != 1 {
		t.Fatalf("fresh statfs %+v", st)
	}
	f := v.file(meta.RootIno, "f")
	v.dir(meta.RootIno, "d")
	v.write(f.Ino, 0, 10000)
	st, err = e.Statfs(v.ctx)
	v.check(err, "statfs")
	if st.UsedInodes != 3 || st.UsedSpace < 10000 {
		t.Fatalf("statfs after writes %+v", st)
	}
	_, err = e.Unlink(v.ctx, meta.RootIno, "f")
	v.check(err, "unlink")
	v.check(e.Purge(v.ctx, f.Ino), "purge")
	st, err = e.Statfs(v.ctx)
	v.check(err, "statfs")
	if st.UsedInodes != 2 || st.UsedSpace != 0 {
		t.Fatalf("statfs after purge %+v", st)
	}
}

func testReaddirPaging(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	d := v.dir(meta.RootIno, "big")
	const n = 10000
	want := make([]string, 0, n)
	for i := range n {
		name := fmt.Sprintf("f%05d-%x", (i*7919)%n, i)
		v.file(d.Ino, name)
		want = append(want, name)
	}
	sort.Strings(want)
	for _, limit := range []int{7, 100, 1000, 1} {
		// A pass at limit 1 would cost 10,000 calls: it stops after 300.
		pages := n + 1
		if limit == 1 {
			pages = 300
		}
		got := readdirPages(v, d.Ino, limit, pages, limit == 100)
		if w := want[:min(len(want), len(got))]; !slices.Equal(got, w) || (limit > 1 && len(got) != n) {
			t.Fatalf("limit %d: %d entries, want %d (sorted, no dups, no misses)", limit, len(got), len(want))
		}
	}
}

// readdirPages reads directory ino in pages of limit entries, at most
// pages of them, checking that no page is too long.
func readdirPages(v *env, ino meta.Ino, limit, pages int, plus bool) []string {
	var got []string
	after := ""
	for range pages {
		ents, err := v.e.Readdir(v.ctx, ino, after, limit, plus)
		v.check(err, "readdir page")
		if len(ents) > limit {
			v.t.Fatalf("limit %d: page of %d", limit, len(ents))
		}
		if len(ents) == 0 {
			break
		}
		for _, de := range ents {
			if plus && (de.Attr == nil || de.Attr.Type != de.Type) {
				v.t.Fatalf("readdir plus entry %+v", de)
			}
			got = append(got, de.Name)
		}
		after = ents[len(ents)-1].Name
	}
	return got
}

func testConcurrency(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	d := v.dir(meta.RootIno, "d")
	const workers, perWorker = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- concurrentWorker(v, d.Ino, w, perWorker)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	names := v.names(d.Ino)
	if len(names) != workers*perWorker {
		t.Fatalf("%d entries, want %d", len(names), workers*perWorker)
	}
	for _, name := range names {
		if name[0] != 'r' {
			t.Fatalf("entry %q was not renamed", name)
		}
	}
	if a := v.attr(d.Ino); a.Nlink != 2+workers*perWorker/2 {
		t.Fatalf("nlink %d, want %d", a.Nlink, 2+workers*perWorker/2)
	}
}

// concurrentWorker creates files and directories under distinct names in
// dir, renaming each right after creating it.
func concurrentWorker(v *env, dir meta.Ino, w, n int) error {
	for i := range n {
		name := fmt.Sprintf("c-%d-%d", w, i)
		typ := meta.TypeFile
		if i%2 == 1 {
			typ = meta.TypeDir
		}
		if _, err := v.e.Mknod(v.ctx, meta.MknodRequest{Parent: dir, Name: name, Type: typ, Mode: 0o644, Exclusive: true}); err != nil {
			return fmt.Errorf("create %s: %w", name, err)
		}
		req := meta.RenameRequest{OldParent: dir, OldName: name, NewParent: dir, NewName: "r" + name}
		if _, err := v.e.Rename(v.ctx, req); err != nil {
			return fmt.Errorf("rename %s: %w", name, err)
		}
	}
	return nil
}

// testOpenTracker checks meta.OpenTracker: a file whose last link goes
// while this client does not hold it open is deleted at once.
func testOpenTracker(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	ot, ok := v.e.(meta.OpenTracker)
	if !ok {
		t.Skip("engine has no OpenTracker")
	}
	held := map[meta.Ino]bool{}
	ot.SetOpenCheck(func(ino meta.Ino) bool { return held[ino] })
	f, g := v.file(meta.RootIno, "f"), v.file(meta.RootIno, "g")
	s := v.write(f.Ino, 0, 10)
	held[g.Ino] = true
	rm, err := v.e.Unlink(v.ctx, meta.RootIno, "f")
	v.check(err, "unlink")
	if rm.Orphan || rm.Ino != f.Ino {
		t.Fatalf("unlink of a closed file: %+v", rm)
	}
	_, err = v.e.Getattr(v.ctx, f.Ino)
	v.wantErrno(err, syscall.ENOENT, "getattr of the deleted file")
	v.wantFreed(s, true)
	rm, err = v.e.Unlink(v.ctx, meta.RootIno, "g")
	v.check(err, "unlink")
	if !rm.Orphan {
		t.Fatalf("unlink of an open file: %+v", rm)
	}
	v.check(v.e.Purge(v.ctx, g.Ino), "purge")
	h := v.file(meta.RootIno, "h")
	v.file(meta.RootIno, "i")
	rm, err = v.e.Rename(v.ctx, meta.RenameRequest{OldParent: meta.RootIno, OldName: "i", NewParent: meta.RootIno, NewName: "h"})
	v.check(err, "rename over a closed file")
	if rm.Orphan || rm.Ino != h.Ino {
		t.Fatalf("rename over a closed file: %+v", rm)
	}
	ot.SetOpenCheck(nil)
	v.file(meta.RootIno, "j")
	if rm, _ = v.e.Unlink(v.ctx, meta.RootIno, "j"); !rm.Orphan {
		t.Fatalf("without a check every unlinked file is an orphan: %+v", rm)
	}
}
