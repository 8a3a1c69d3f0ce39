package vfs_test

import (
	"context"
	"syscall"
	"testing"

	"shoal/internal/meta"
	"shoal/internal/meta/kvmeta"
	"shoal/internal/vfs"
)

// TestFirstChunkAtOpen: an open of a file whose first chunk's list the
// engine's chunk cache holds at the generation the open read hands it to
// the reader (meta.Opened), so the first read lists nothing; after a
// change of the list (a truncate, here) the next open's list is the new
// one.
func TestFirstChunkAtOpen(t *testing.T) {
	ctx := context.Background()
	fs, eng := newCountedFS(t)
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
