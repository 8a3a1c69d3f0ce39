package vfs_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"syscall"
	"testing"

	"shoal/internal/meta"
	"shoal/internal/meta/kvmeta"
	"shoal/internal/vfs"
)

// TestCapsOfCreatedFile: the kernel asks for security.capability before
// the first write to a file it just created (O_EXCL); the answer, that
// there is none, needs no engine read. A capability set afterwards is
// seen.
func TestCapsOfCreatedFile(t *testing.T) {
	ctx := context.Background()
	fs, eng := newCountedFS(t)
	const caps = "security.capability"
	e, res, err := fs.Create(ctx, meta.RootIno, "f", 0o644, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Getxattr(ctx, e.Ino, caps); err != syscall.ENODATA {
		t.Fatalf("%s of a created file: %v, want ENODATA", caps, err)
	}
	if n := eng.gets.Load(); n != 0 {
		t.Errorf("%s of a file just created: %d engine reads, want 0", caps, n)
	}
	v := []byte{1, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	if err := fs.Setxattr(ctx, e.Ino, caps, v, 0); err != nil {
		t.Fatalf("setxattr: %v", err)
	}
	if got, err := fs.Getxattr(ctx, e.Ino, caps); err != nil || !bytes.Equal(got, v) {
		t.Errorf("%s after setxattr: %x, %v; want %x", caps, got, err, v)
	}
	if err := fs.Release(ctx, res.Fh); err != nil {
		t.Fatal(err)
	}
}

// kvCounter counts the Getxattr and ReadChunk calls of a kvmeta engine,
// keeping every other interface it implements (meta.OpenTracker among
// them).
type kvCounter struct {
	*kvmeta.Engine
	gets, lists atomic.Int64
}

func (c *kvCounter) Getxattr(ctx context.Context, ino meta.Ino, name string) ([]byte, error) {
	c.gets.Add(1)
	return c.Engine.Getxattr(ctx, ino, name)
}

func (c *kvCounter) ReadChunk(ctx context.Context, ino meta.Ino, index uint32) ([]meta.Slice, error) {
	c.lists.Add(1)
	return c.Engine.ReadChunk(ctx, ino, index)
}

// newCountedFS is newFS over a kvCounter.
func newCountedFS(t *testing.T) (*vfs.FS, *kvCounter) {
	var eng *kvCounter
	fs, _ := newFSOver(t, func(inner meta.Engine) meta.Engine {
		eng = &kvCounter{Engine: inner.(*kvmeta.Engine)}
		return eng
	})
	return fs, eng
}

// TestCapsOfOpenedFile: the kernel asks for security.capability before
// the first write of each open; for a file without xattrs the open's own
// engine read already says there is none (meta.Opened), so the answer
// costs no engine read. A file with a capability is read (and seen).
func TestCapsOfOpenedFile(t *testing.T) {
	ctx := context.Background()
	fs, eng := newCountedFS(t)
	const caps = "security.capability"
	made := func(name string) meta.Ino {
		e, res, err := fs.Create(ctx, meta.RootIno, name, 0o644, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL)
		if err != nil {
			t.Fatal(err)
		}
		if err := fs.Release(ctx, res.Fh); err != nil {
			t.Fatal(err)
		}
		return e.Ino
	}
	plain, capped := made("plain"), made("capped")
	v := []byte{1, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	if err := fs.Setxattr(ctx, capped, caps, v, 0); err != nil {
		t.Fatalf("setxattr: %v", err)
	}
	for _, c := range []struct {
		ino   meta.Ino
		want  []byte
		reads int64
	}{{plain, nil, 0}, {capped, v, 1}} {
		before := eng.gets.Load()
		res, err := fs.Open(ctx, c.ino, syscall.O_WRONLY|syscall.O_APPEND)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fs.Getxattr(ctx, c.ino, caps)
		if c.want == nil && err != syscall.ENODATA || c.want != nil && (err != nil || !bytes.Equal(got, c.want)) {
			t.Errorf("%s of inode %d after open: %x, %v; want %x", caps, c.ino, got, err, c.want)
		}
		if n := eng.gets.Load() - before; n != c.reads {
			t.Errorf("%s of inode %d after open: %d engine reads, want %d", caps, c.ino, n, c.reads)
		}
		if err := fs.Release(ctx, res.Fh); err != nil {
			t.Fatal(err)
		}
	}
}
