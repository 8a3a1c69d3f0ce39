package vfs_test

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"shoal/internal/meta"
)

// gatedEngine counts ReadChunk calls and, while gate is set, holds each
// until the gate is closed.
type gatedEngine struct {
	meta.Engine
	lists atomic.Int64
	gate  atomic.Pointer[chan struct{}]
}

func (g *gatedEngine) ReadChunk(ctx context.Context, ino meta.Ino, index uint32) ([]meta.Slice, error) {
	g.lists.Add(1)
	if c := g.gate.Load(); c != nil {
		<-*c
	}
	return g.Engine.ReadChunk(ctx, ino, index)
}

// TestOpenWarmsFirstRead: opening a file for reading lists its first
// chunk and loads its first small block before any read; the read that
// follows while that list is still in flight waits for it rather than
// list the chunk again, and finds the block cached. Opens that will not
// read through this mount soon (write-only, an empty file) load nothing.
func TestOpenWarmsFirstRead(t *testing.T) {
	ctx := context.Background()
	var eng *gatedEngine
	fs, store := newFSOver(t, func(inner meta.Engine) meta.Engine {
		eng = &gatedEngine{Engine: inner}
		return eng
	})
	want := []byte("a small file, read soon after its open")
	f, fh := create(t, fs, "f")
	if _, err := fs.Write(ctx, fh, 0, want); err != nil {
		t.Fatal(err)
	}
	if err := fs.Release(ctx, fh); err != nil {
		t.Fatal(err)
	}
	if n := eng.lists.Load(); n != 0 {
		t.Fatalf("%d lists before the open", n)
	}
	gate := make(chan struct{})
	eng.gate.Store(&gate)
	res, err := fs.Open(ctx, f, syscall.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the open's list", func() bool { return eng.lists.Load() == 1 })
	read := make(chan []byte)
	go func() {
		buf := make([]byte, 4096)
		n, err := fs.Read(ctx, res.Fh, 0, buf)
		if err != nil {
			t.Error(err)
		}
		read <- buf[:n]
	}()
	time.Sleep(50 * time.Millisecond) // the read reaches the list in flight
	close(gate)
	if got := <-read; string(got) != string(want) {
		t.Fatalf("read %q, want %q", got, want)
	}
	if err := fs.Release(ctx, res.Fh); err != nil {
		t.Fatal(err)
	}
	if n, st := eng.lists.Load(), store.Stats(); n != 1 || st.BlocksFetched != 1 || st.CacheMisses != 1 {
		t.Fatalf("open then read: %d lists, %+v; want one list and one block fetched once", n, st)
	}

	// No warm-up: a reopen of the unchanged file (the kernel keeps its
	// pages), a write-only open, the open of an empty file.
	g, fh := create(t, fs, "g")
	if _, err := fs.Write(ctx, fh, 0, want); err != nil {
		t.Fatal(err)
	}
	if err := fs.Release(ctx, fh); err != nil {
		t.Fatal(err)
	}
	empty, fh := create(t, fs, "empty")
	if err := fs.Release(ctx, fh); err != nil {
		t.Fatal(err)
	}
	for _, o := range []struct {
		ino   meta.Ino
		flags uint32
	}{{f, syscall.O_RDONLY}, {g, syscall.O_WRONLY}, {empty, syscall.O_RDONLY}} {
		res, err := fs.Open(ctx, o.ino, o.flags)
		if err != nil {
			t.Fatal(err)
		}
		if err := fs.Release(ctx, res.Fh); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n, st := eng.lists.Load(), store.Stats(); n != 1 || st.CacheMisses != 1 {
		t.Fatalf("reopen, write-only open, open of an empty file: %d lists, %d block reads in all; want no more than the first open's", n, st.CacheMisses)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
