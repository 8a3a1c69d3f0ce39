package vfs_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"syscall"
	"testing"

	"shoal/internal/data"
	"shoal/internal/meta"
	"shoal/internal/meta/kv/memkv"
	"shoal/internal/meta/kvmeta"
	"shoal/internal/object/memstore"
	"shoal/internal/vfs"
)

// xattrCounter counts the engine's Getxattr calls.
type xattrCounter struct {
	meta.Engine
	gets atomic.Int64
}

func (c *xattrCounter) Getxattr(ctx context.Context, ino meta.Ino, name string) ([]byte, error) {
	c.gets.Add(1)
	return c.Engine.Getxattr(ctx, ino, name)
}

// TestCapsOfCreatedFile: the kernel asks for security.capability before
// the first write to a file it just created (O_EXCL); the answer, that
// there is none, needs no engine read. A capability set afterwards is
// seen.
func TestCapsOfCreatedFile(t *testing.T) {
	ctx := context.Background()
	kv := kvmeta.New(memkv.New(), kvmeta.Options{})
	if err := kv.Format(ctx, meta.Format{Name: "t", Version: meta.CurrentFormatVersion, Storage: "mem", BlockSize: 64 << 10}, false); err != nil {
		t.Fatal(err)
	}
	eng := &xattrCounter{Engine: kv}
	store := data.New(memstore.New(), data.Config{BlockSize: 64 << 10})
	fs := vfs.New(eng, store, vfs.Config{})
	t.Cleanup(func() {
		_ = fs.Close(ctx)
		store.Close()
		kv.Close()
	})
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

// TestCapsOfOpenedFile: the kernel asks for security.capability before
// the first write of each open; for a file without xattrs the open's own
// engine read already says there is none (meta.Opened), so the answer
// costs no engine read. A file with a capability is read (and seen).
func TestCapsOfOpenedFile(t *testing.T) {
	ctx := context.Background()
	kv := kvmeta.New(memkv.New(), kvmeta.Options{})
	if err := kv.Format(ctx, meta.Format{Name: "t", Version: meta.CurrentFormatVersion, Storage: "mem", BlockSize: 64 << 10}, false); err != nil {
		t.Fatal(err)
	}
	eng := &kvCounter{Engine: kv}
	store := data.New(memstore.New(), data.Config{BlockSize: 64 << 10})
	fs := vfs.New(eng, store, vfs.Config{})
	t.Cleanup(func() {
		_ = fs.Close(ctx)
		store.Close()
		kv.Close()
	})
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

// TestFirstChunkAtOpen: an open of a file whose first chunk's list the
// engine's chunk cache holds at the generation the open read hands it to
// the reader (meta.Opened), so the first read lists nothing; after a
// change of the list (a truncate, here) the next open's list is the new
// one.
func TestFirstChunkAtOpen(t *testing.T) {
	ctx := context.Background()
	var eng *kvCounter
	fs, _ := newFSOver(t, func(inner meta.Engine) meta.Engine {
		eng = &kvCounter{Engine: inner.(*kvmeta.Engine)}
		return eng
	})
	want := []byte("a small file, read again after its close")
	f, fh := create(t, fs, "f")
	if _, err := fs.Write(ctx, fh, 0, want); err != nil {
		t.Fatal(err)
	}
	if err := fs.Release(ctx, fh); err != nil {
		t.Fatal(err)
	}
	read := func(what string, want []byte) {
		t.Helper()
		before := eng.lists.Load()
		res, err := fs.Open(ctx, f, syscall.O_RDONLY)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4096)
		n, err := fs.Read(ctx, res.Fh, 0, buf)
		if err != nil || string(buf[:n]) != string(want) {
			t.Errorf("%s: read %q, %v; want %q", what, buf[:n], err, want)
		}
		if err := fs.Release(ctx, res.Fh); err != nil {
			t.Fatal(err)
		}
		if n := eng.lists.Load() - before; n != 0 {
			t.Errorf("%s: %d engine lists of a chunk the open had, want 0", what, n)
		}
	}
	read("open and read", want)
	res, err := fs.Open(ctx, f, syscall.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Setattr(ctx, f, vfs.SetattrRequest{SetSize: true, Size: 7}); err != nil {
		t.Fatal(err)
	}
	if err := fs.Release(ctx, res.Fh); err != nil {
		t.Fatal(err)
	}
	read("open and read after a truncate", want[:7])
}

// hookedOpen runs hook after the engine's Open, before the vfs uses what
// it read.
type hookedOpen struct {
	*kvmeta.Engine
	hook func()
}

func (h *hookedOpen) Open(ctx context.Context, ino meta.Ino, mask uint32) (meta.Attr, error) {
	a, err := h.Engine.Open(ctx, ino, mask)
	if f := h.hook; f != nil {
		h.hook = nil
		f()
	}
	return a, err
}

// TestFirstChunkAtOpenRace: a commit of this mount that lands after the
// open's engine read, before the open keeps the list it read, is not lost:
// the list, which lacks it, is not kept (the committed data is no longer
// painted from the writer), and the read lists the chunk again.
func TestFirstChunkAtOpenRace(t *testing.T) {
	ctx := context.Background()
	var eng *hookedOpen
	fs, _ := newFSOver(t, func(inner meta.Engine) meta.Engine {
		eng = &hookedOpen{Engine: inner.(*kvmeta.Engine)}
		return eng
	})
	f, fh := create(t, fs, "f")
	if _, err := fs.Write(ctx, fh, 0, []byte("old.")); err != nil {
		t.Fatal(err)
	}
	if err := fs.Flush(ctx, fh); err != nil {
		t.Fatal(err)
	}
	eng.hook = func() { // another handle's write, committed meanwhile
		if _, err := fs.Write(ctx, fh, 0, []byte("new.")); err != nil {
			t.Error(err)
		}
		if err := fs.Flush(ctx, fh); err != nil {
			t.Error(err)
		}
	}
	res, err := fs.Open(ctx, f, syscall.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, err := fs.Read(ctx, res.Fh, 0, buf)
	if err != nil || string(buf[:n]) != "new." {
		t.Errorf("read after a commit that landed during the open: %q, %v; want %q", buf[:n], err, "new.")
	}
	for _, h := range []vfs.Fh{res.Fh, fh} {
		if err := fs.Release(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
}
