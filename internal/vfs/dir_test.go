package vfs_test

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"shoal/internal/meta"
	"shoal/internal/vfs"
)

// countingEngine counts the entries its Readdir returns, without and with
// attributes, and its Getattr and Access calls.
type countingEngine struct {
	meta.Engine
	names, plus     atomic.Int64
	getattr, access atomic.Int64
}

func (c *countingEngine) Getattr(ctx context.Context, ino meta.Ino) (meta.Attr, error) {
	c.getattr.Add(1)
	return c.Engine.Getattr(ctx, ino)
}

func (c *countingEngine) Access(ctx context.Context, ino meta.Ino, mask uint32) error {
	c.access.Add(1)
	return c.Engine.Access(ctx, ino, mask)
}

func (c *countingEngine) Readdir(ctx context.Context, ino meta.Ino, after string, limit int, plus bool) ([]meta.DirEntry, error) {
	page, err := c.Engine.Readdir(ctx, ino, after, limit, plus)
	if !plus {
		c.names.Add(int64(len(page)))
	} else {
		c.plus.Add(int64(len(page)))
	}
	return page, err
}

// TestReaddirNamesReadOnce lists a directory the way the kernel does
// (READDIRPLUS_AUTO): attributes for the first request, whose buffer the
// first page fills but for a few bytes, then names only; and the same with
// attributes asked again for the second request (after a lookup in the
// directory), with and without a change in between. The names read ahead
// after the first page serve the plain requests that follow: no name is
// read twice.
func TestReaddirNamesReadOnce(t *testing.T) {
	var eng *countingEngine
	fs, _ := newFSOver(t, func(inner meta.Engine) meta.Engine {
		eng = &countingEngine{Engine: inner}
		return eng
	})
	const n = 10000
	mknodMany(t, fs, n)
	// With a change in between, the second request's attributes are read
	// kernel-sized; without, a page of readdirPage serves several.
	for _, again := range []struct{ plus, changed bool }{{false, false}, {true, false}, {true, true}} {
		eng.names.Store(0)
		eng.plus.Store(0)
		list(t, fs, n, again.plus, again.changed)
		// Reads ahead may still run: wait until the count holds still.
		got := eng.names.Load()
		for {
			time.Sleep(100 * time.Millisecond)
			if now := eng.names.Load(); now != got {
				got = now
				continue
			}
			break
		}
		if got > n {
			t.Errorf("%+v: the engine read %d names for a listing of %d entries: a page of names was read twice", again, got, n)
		}
		if got := eng.plus.Load(); !again.plus && got != 49 {
			t.Errorf("%+v: the engine read %d entries with attributes for one request of 49", again, got)
		}
	}
}

// list lists the root as the kernel does: attributes for the first
// request, again for the second if plusAgain (after a change if changed),
// then names.
func list(t *testing.T, fs *vfs.FS, n int, plusAgain, changed bool) {
	ctx := context.Background()
	fh, err := fs.Opendir(ctx, meta.RootIno)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Releasedir(fh)
	seen := map[string]bool{}
	off := uint64(0)
	// request lists from off as the kernel would, fitting room entries.
	request := func(plusN, room int) int {
		got := 0
		err := fs.Readdir(ctx, fh, off, plusN, time.Second, func(e meta.DirEntry, next uint64, _ time.Time) bool {
			if got == room {
				return false
			}
			if seen[e.Name] {
				t.Fatalf("duplicate %s", e.Name)
			}
			seen[e.Name] = true
			off, got = next, got+1
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	request(49, 52) // ".", ".." and 49 names with attributes fill the buffer but for a few bytes
	if changed {
		fs.Changed()
	}
	if plusAgain {
		request(49, 50) // attributes again: a name was looked up
	}
	for request(0, 256) > 0 {
	}
	if len(seen) != n+2 {
		t.Fatalf("listed %d entries, want %d", len(seen), n+2)
	}
}

// TestReaddirRewindReadsAfresh rewinds a listing after its first request,
// when the names after the first page have been read ahead, and a name
// was created meanwhile: rewinddir must show the directory as it is now
// (POSIX), so the listing after the rewind holds the new name.
func TestReaddirRewindReadsAfresh(t *testing.T) {
	ctx := context.Background()
	fs := newFS(t)
	const n = 1000
	mknodMany(t, fs, n)
	fh, err := fs.Opendir(ctx, meta.RootIno)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Releasedir(fh)
	read := func(off uint64, plusN, room int, seen map[string]bool) uint64 {
		got := 0
		err := fs.Readdir(ctx, fh, off, plusN, time.Second, func(e meta.DirEntry, next uint64, _ time.Time) bool {
			if got == room {
				return false
			}
			seen[e.Name] = true
			off, got = next, got+1
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if got == 0 {
			return 0
		}
		return off
	}
	read(0, 49, 52, map[string]bool{})
	time.Sleep(100 * time.Millisecond) // the names after the first page are read ahead
	if _, err := fs.Mknod(ctx, meta.RootIno, "g", syscall.S_IFREG|0o644, 0); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	off := read(0, 49, 52, seen) // rewound: the kernel asks from offset 0 again
	for off > 0 {
		off = read(off, 0, 256, seen)
	}
	if !seen["g"] || len(seen) != n+3 {
		t.Fatalf("after the rewind the listing holds %d entries (g: %v), want %d with g", len(seen), seen["g"], n+3)
	}
}

// TestOpendirOneRead: an opendir from the kernel (a trusted credential:
// default_permissions checked the caller) reads the directory once; the
// engine's Access would read the same attributes again. An untrusted
// caller is still checked.
func TestOpendirOneRead(t *testing.T) {
	var eng *countingEngine
	fs, _ := newFSOver(t, func(inner meta.Engine) meta.Engine {
		eng = &countingEngine{Engine: inner}
		return eng
	})
	root := meta.WithCred(context.Background(), meta.Cred{Trusted: true})
	d, err := fs.Mkdir(root, meta.RootIno, "d", 0o700)
	if err != nil {
		t.Fatal(err)
	}
	trusted := meta.WithCred(context.Background(), meta.Cred{Uid: 1000, Gid: 1000, Trusted: true})
	g0, a0 := eng.getattr.Load(), eng.access.Load()
	fh, err := fs.Opendir(trusted, d.Ino)
	if err != nil {
		t.Fatal(err)
	}
	fs.Releasedir(fh)
	if g, a := eng.getattr.Load()-g0, eng.access.Load()-a0; g+a != 1 {
		t.Errorf("opendir: %d getattr + %d access engine reads, want 1 in all", g, a)
	}
	other := meta.WithCred(context.Background(), meta.Cred{Uid: 1000, Gid: 1000})
	if _, err := fs.Opendir(other, d.Ino); err != syscall.EACCES {
		t.Errorf("opendir of a 0700 directory of root by uid 1000: %v, want EACCES", err)
	}
}
