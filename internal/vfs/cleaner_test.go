package vfs_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"shoal/internal/data"
	"shoal/internal/meta"
	"shoal/internal/meta/kv/memkv"
	"shoal/internal/meta/kvmeta"
	"shoal/internal/object/memstore"
	"shoal/internal/vfs"
)

// TestCleanerAsksMayDelete: while Config.MayDelete refuses (the bucket is
// shared with a copy of the volume), the objects of freed slices stay,
// and so does the freed list; once it allows, they are deleted.
func TestCleanerAsksMayDelete(t *testing.T) {
	ctx := context.Background()
	eng := kvmeta.New(memkv.New(), kvmeta.Options{})
	if err := eng.Format(ctx, meta.Format{Name: "t", Version: meta.CurrentFormatVersion, Storage: "mem", BlockSize: 64 << 10}, false); err != nil {
		t.Fatal(err)
	}
	objects := memstore.New()
	store := data.New(objects, data.Config{BlockSize: 64 << 10})
	var allow atomic.Bool
	var asked atomic.Int32
	fs := vfs.New(eng, store, vfs.Config{DeleteDelay: time.Millisecond, CleanInterval: 5 * time.Millisecond,
		MayDelete: func(context.Context) error {
			asked.Add(1)
			if allow.Load() {
				return nil
			}
			return errors.New("shared")
		}})
	t.Cleanup(func() { fs.Close(ctx); store.Close(); eng.Close() })

	_, fh := create(t, fs, "f")
	if _, err := fs.Write(ctx, fh, 0, make([]byte, 200<<10)); err != nil {
		t.Fatal(err)
	}
	if err := fs.Release(ctx, fh); err != nil {
		t.Fatal(err)
	}
	if err := fs.Unlink(ctx, meta.RootIno, "f"); err != nil {
		t.Fatal(err)
	}
	blocks := func() int {
		infos, err := objects.List(ctx, "chunks/", "", 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(infos)
	}
	n := blocks()
	if n == 0 {
		t.Fatal("setup: no blocks stored")
	}
	// Some cleaner rounds (the slice is ripe after 1 ms).
	settle := time.Now().Add(time.Second)
	for asked.Load() < 5 && time.Now().Before(settle) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := blocks(); got != n {
		t.Fatalf("%d of %d blocks deleted while MayDelete refused", n-got, n)
	}
	if asked.Load() < 5 {
		t.Fatal("the cleaner never asked MayDelete")
	}
	if freed, err := eng.FreedSlices(ctx, 10); err != nil || len(freed) == 0 {
		t.Fatalf("freed list emptied while deletes were held: %v %v", freed, err)
	}
	allow.Store(true)
	deadline := time.Now().Add(5 * time.Second)
	for blocks() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := blocks(); got != 0 {
		t.Fatalf("%d blocks left after MayDelete allowed", got)
	}
}
