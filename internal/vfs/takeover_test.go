package vfs_test

import (
	"context"
	"io"
	"sync"
	"syscall"
	"testing"
	"time"

	"shoal/internal/data"
	"shoal/internal/journal"
	"shoal/internal/meta"
	"shoal/internal/meta/kv/memkv"
	"shoal/internal/meta/kvmeta"
	"shoal/internal/object/memstore"
	"shoal/internal/vfs"
)

// TestRotationKeepsTheWriteThatTriggeredIt: the write whose record fills a
// segment starts the background flush that deletes the segment; that
// flush must commit the write (wait for it) before its only record goes.
// A successor that finds only the new segment must still see the data.
func TestRotationKeepsTheWriteThatTriggeredIt(t *testing.T) {
	ctx := context.Background()
	eng := kvmeta.New(memkv.New(), kvmeta.Options{})
	if err := eng.Format(ctx, meta.Format{Name: "t", Version: meta.CurrentFormatVersion, Storage: "mem", BlockSize: 64 << 10}, false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	objects := memstore.New()
	store1 := data.New(objects, data.Config{BlockSize: 64 << 10})
	fs1 := vfs.New(eng, store1, vfs.Config{}) // never closed: it "crashes"
	e, res, err := fs1.Create(ctx, meta.RootIno, "f", 0o644, syscall.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	synced := make(chan struct{})
	var once sync.Once
	j, err := journal.Create(dir, fs1.State(), journal.Options{
		SegmentSize: 1, // the first record after the checkpoint rotates
		Sync: func() error {
			defer once.Do(func() { close(synced) })
			return fs1.Sync(ctx)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	fs1.AttachJournal(j)

	// Hold the write between its record and its buffering until the
	// rotation's flush is done (or, if the flush rightly waits for the
	// write, a while).
	vfs.SetJournaledHook(func() {
		select {
		case <-synced:
		case <-time.After(300 * time.Millisecond):
		}
	})
	t.Cleanup(func() { vfs.SetJournaledHook(nil) })
	want := "acknowledged"
	if _, err := fs1.Write(ctx, res.Fh, 0, []byte(want)); err != nil {
		t.Fatal(err)
	}
	vfs.SetJournaledHook(nil)
	if err := j.Close(); err != nil { // waits for the background flush
		t.Fatal(err)
	}

	// kill -9: fs1's buffers are gone; a successor adopts the journal.
	st, err := journal.Recover(dir)
	if err != nil {
		t.Fatal(err)
	}
	store2 := data.New(objects, data.Config{BlockSize: 64 << 10})
	t.Cleanup(func() { store2.Close() })
	fs2 := vfs.New(eng, store2, vfs.Config{})
	t.Cleanup(func() { _ = fs2.Close(ctx) })
	if err := fs2.Adopt(ctx, st); err != nil {
		t.Fatal(err)
	}
	or, err := fs2.Open(ctx, e.Ino, syscall.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, fs2, or.Fh, 64); string(got) != want {
		t.Fatalf("after rotation and a crash the file holds %q, want %q (journal writes: %d)", got, want, len(st.Writes))
	}
}

// TestRequestsJournaled: an open and an O_APPEND write that answer a
// kernel request (vfs.WithRequest) leave in the journal what a successor
// answers the request's resend with: the handle (adopted under its
// number) and the byte count, the append itself replayed once.
func TestRequestsJournaled(t *testing.T) {
	ctx := context.Background()
	eng := kvmeta.New(memkv.New(), kvmeta.Options{})
	if err := eng.Format(ctx, meta.Format{Name: "t", Version: meta.CurrentFormatVersion, Storage: "mem", BlockSize: 64 << 10}, false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	objects := memstore.New()
	fs1 := vfs.New(eng, data.New(objects, data.Config{BlockSize: 64 << 10}), vfs.Config{}) // "crashes"
	dir := t.TempDir()
	j, err := journal.Create(dir, fs1.State(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fs1.AttachJournal(j)
	e, _, err := fs1.Create(vfs.WithRequest(ctx, 20), meta.RootIno, "log", 0o644, syscall.O_WRONLY|syscall.O_APPEND)
	if err != nil {
		t.Fatal(err)
	}
	res, err := fs1.Open(vfs.WithRequest(ctx, 22), e.Ino, syscall.O_WRONLY|syscall.O_APPEND)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs1.Write(vfs.WithRequest(ctx, 24), res.Fh, 0, []byte("once")); err != nil {
		t.Fatal(err)
	}
	j.Close()
	st, err := journal.Recover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h := st.Handles[uint64(res.Fh)]; h.Request != 22 || h.DirectIO != res.DirectIO || h.KeepCache != res.KeepCache {
		t.Fatalf("handle %d journaled as %+v, opened as %+v", res.Fh, h, res)
	}
	if r := st.Replies[24]; r.Written != 4 {
		t.Fatalf("the append's reply: %+v", st.Replies)
	}
	fs2 := vfs.New(eng, data.New(objects, data.Config{BlockSize: 64 << 10}), vfs.Config{})
	t.Cleanup(func() { _ = fs2.Close(ctx) })
	if err := fs2.Adopt(ctx, st); err != nil {
		t.Fatal(err)
	}
	if got := fs2.State().Handles[uint64(res.Fh)]; got.Request != 22 {
		t.Fatalf("the adopted handle lost its request: %+v", got)
	}
	rd, err := fs2.Open(ctx, e.Ino, syscall.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, fs2, rd.Fh, 64); string(got) != "once" {
		t.Fatalf("after the takeover the file holds %q", got)
	}
}

// gatedStore holds every Put until open is closed, saying on entered
// (once) that one waits.
type gatedStore struct {
	*memstore.Store
	open    chan struct{}
	entered chan struct{}
	once    *sync.Once
}

func (g gatedStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	g.once.Do(func() { close(g.entered) })
	select {
	case <-g.open:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Store.Put(ctx, key, r, size)
}

// TestSyncWaitsForAFileBeingClosed: Sync is what a journal rotation runs
// before it deletes the older segments, which may hold the only record of
// a write the last release of a file is still committing. Sync must wait
// for that close (and succeed with it), not return at once: the file has
// already left the open files when its close starts.
func TestSyncWaitsForAFileBeingClosed(t *testing.T) {
	ctx := context.Background()
	eng := kvmeta.New(memkv.New(), kvmeta.Options{})
	if err := eng.Format(ctx, meta.Format{Name: "t", Version: meta.CurrentFormatVersion, Storage: "mem", BlockSize: 64 << 10}, false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	g := gatedStore{Store: memstore.New(), open: make(chan struct{}), entered: make(chan struct{}), once: &sync.Once{}}
	store := data.New(g, data.Config{BlockSize: 64 << 10})
	t.Cleanup(func() { store.Close() })
	fs := vfs.New(eng, store, vfs.Config{})
	t.Cleanup(func() { _ = fs.Close(ctx) })
	ino, fh := create(t, fs, "f")
	if _, err := fs.Write(ctx, fh, 0, []byte("acknowledged")); err != nil {
		t.Fatal(err)
	}
	released := make(chan error, 1)
	go func() { released <- fs.Release(ctx, fh) }()
	<-g.entered // the close is storing the write

	synced := make(chan error, 1)
	go func() { synced <- fs.Sync(ctx) }()
	select {
	case err := <-synced:
		t.Fatalf("Sync returned (%v) while a file's close was still storing its write: a journal rotation would delete the write's only record", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(g.open)
	if err := <-synced; err != nil {
		t.Fatalf("Sync with a file closed meanwhile: %v", err)
	}
	if attr, err := eng.Getattr(ctx, ino); err != nil || attr.Length != uint64(len("acknowledged")) {
		t.Fatalf("after Sync the engine has length %d (%v), want the write committed", attr.Length, err)
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
}
