package vfs_test

import (
	"context"
	"errors"
	"fmt"
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
	if freed, err := eng.FreedSlices(ctx, 0, 10); err != nil || len(freed) == 0 {
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

// sizedEngine records the largest FreedSlices limit and ForgetFreed batch
// the cleaner asks for, and whether it ever listed without a limit.
type sizedEngine struct {
	meta.Engine
	maxLimit, maxForget, lists atomic.Int64
	unlimited                  atomic.Bool
}

func (e *sizedEngine) FreedSlices(ctx context.Context, after meta.SliceID, limit int) ([]meta.Slice, error) {
	e.lists.Add(1)
	if limit <= 0 {
		e.unlimited.Store(true)
	} else if int64(limit) > e.maxLimit.Load() {
		e.maxLimit.Store(int64(limit))
	}
	return e.Engine.FreedSlices(ctx, after, limit)
}

func (e *sizedEngine) ForgetFreed(ctx context.Context, ids []meta.SliceID) error {
	if int64(len(ids)) > e.maxForget.Load() {
		e.maxForget.Store(int64(len(ids)))
	}
	return e.Engine.ForgetFreed(ctx, ids)
}

// TestCleanerPagesFreedList: the cleaner reads the freed list and forgets
// it in small engine calls (on Redis one call is one script, which holds
// the server: a 100,000-slice listing held it for seconds), and still
// deletes a backlog many pages long once it is DeleteDelay old. With no
// reading budget beyond its fixed pages a tick, a pass over the backlog
// takes several ticks (the cleaner goes on where the last tick stopped).
func TestCleanerPagesFreedList(t *testing.T) {
	old := vfs.SetCleanBudget(0)
	t.Cleanup(func() { vfs.SetCleanBudget(old) })
	ctx := context.Background()
	eng := kvmeta.New(memkv.New(), kvmeta.Options{})
	if err := eng.Format(ctx, meta.Format{Name: "t", Version: meta.CurrentFormatVersion, Storage: "mem", BlockSize: 64 << 10}, false); err != nil {
		t.Fatal(err)
	}
	// A backlog of freed slices, many pages long.
	const n = 5000 // more than two ticks' pages
	mctx := meta.WithCred(ctx, meta.Cred{Trusted: true})
	for i := range n {
		ent, err := eng.Mknod(mctx, meta.MknodRequest{Parent: meta.RootIno, Name: fmt.Sprint("f", i), Type: meta.TypeFile, Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		id, err := eng.NewSliceID(mctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := eng.WriteChunk(mctx, ent.Ino, 0, meta.Slice{ID: id, Size: 100, Len: 100}); err != nil {
			t.Fatal(err)
		}
		rm, err := eng.Unlink(mctx, meta.RootIno, fmt.Sprint("f", i))
		if err != nil {
			t.Fatal(err)
		}
		if rm.Orphan {
			if err := eng.Purge(mctx, ent.Ino); err != nil {
				t.Fatal(err)
			}
		}
	}
	if freed, err := eng.FreedSlices(ctx, 0, 0); err != nil || len(freed) != n {
		t.Fatalf("setup: %d freed slices (%v), want %d", len(freed), err, n)
	}
	sized := &sizedEngine{Engine: eng}
	store := data.New(memstore.New(), data.Config{BlockSize: 64 << 10})
	fs := vfs.New(sized, store, vfs.Config{DeleteDelay: 300 * time.Millisecond, CleanInterval: 5 * time.Millisecond})
	t.Cleanup(func() { fs.Close(ctx); store.Close(); eng.Close() })
	start := time.Now()
	deadline := start.Add(20 * time.Second)
	var left []meta.Slice
	for {
		var err error
		if left, err = eng.FreedSlices(ctx, 0, 0); err != nil {
			t.Fatal(err)
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		if len(left) < n && time.Since(start) < 300*time.Millisecond {
			t.Fatalf("%d freed slices deleted before DeleteDelay", n-len(left))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(left) != 0 {
		t.Fatalf("%d of %d freed slices left after %v", len(left), n, time.Since(start))
	}
	const most = 256
	if l := sized.maxLimit.Load(); sized.unlimited.Load() || l > most {
		t.Errorf("the cleaner listed up to %d freed slices in one engine call, want at most %d", l, most)
	}
	if f := sized.maxForget.Load(); f > most {
		t.Errorf("the cleaner forgot %d freed slices in one engine call, want at most %d", f, most)
	}
	t.Logf("drained %d freed slices in %v, %d listings", n, time.Since(start), sized.lists.Load())
}
