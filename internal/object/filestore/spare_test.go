package filestore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"shoal/internal/object"
	"shoal/internal/object/objecttest"
)

// spareStore returns a store keeping spares, stopped (and checked to
// leave no spare behind) at the end of the test.
func spareStore(t *testing.T) *Store {
	s := newStore(t)
	stop := s.KeepSpares()
	t.Cleanup(func() {
		stop()
		assertNoTemp(t, s)
	})
	return s
}

func TestConformanceSpares(t *testing.T) {
	objecttest.Run(t, func(t *testing.T) object.Store { return freshStore{spareStore(t)} })
}

// readySpares returns a spare-keeping store whose pool is full for
// directory "d" (two small fresh Puts there started it), and the fresh-key
// context of such Puts.
func readySpares(t *testing.T) (*Store, context.Context) {
	s := spareStore(t)
	ctx := object.WithFreshKey(context.Background())
	for _, k := range []string{"d/1", "d/2"} {
		if err := s.Put(ctx, k, strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
	}
	waitSpares(t, s, spareCount)
	return s, ctx
}

// waitSpares waits until the pool has n spares.
func waitSpares(t *testing.T, s *Store, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.spares.mu.Lock()
		have := len(s.spares.free)
		s.spares.mu.Unlock()
		if have >= n {
			return
		}
	}
	t.Fatalf("the pool never had %d spares", n)
}

// TestSparePuts checks that small fresh Puts into one directory take
// spares once two went there, that each returns only after the object
// and its directory entry were synced (the engine commit naming a block
// follows its Put and must never outlive a power cut the block does
// not), and that the objects hold exactly their bytes whether the spare
// was longer or shorter than they are.
func TestSparePuts(t *testing.T) {
	s := spareStore(t)
	var mu sync.Mutex
	synced := map[string]bool{}
	used := map[string]bool{}
	testHookSynced = func(p string) { mu.Lock(); synced[p] = true; mu.Unlock() }
	testHookSpareUsed = func(p string) { mu.Lock(); used[p] = true; mu.Unlock() }
	t.Cleanup(func() { testHookSynced, testHookSpareUsed = nil, nil })
	ctx := object.WithFreshKey(context.Background())
	put := func(key, body string) {
		t.Helper()
		if err := s.Put(ctx, key, strings.NewReader(body), int64(len(body))); err != nil {
			t.Fatal(err)
		}
	}
	put("chunks/0/0/1_0_5", "first")
	put("chunks/0/0/2_0_6", "second") // the second Put in a row here: spares of 6 bytes are made
	waitSpares(t, s, spareCount)
	for i, body := range []string{"abcdef", "abc", "a longer body than the spares"} {
		key := fmt.Sprintf("chunks/0/0/%d_0_%d", 10+i, len(body))
		path := filepath.Join(s.Root(), key)
		put(key, body)
		mu.Lock()
		if !used[path] {
			t.Errorf("Put %d (%d bytes) took no spare", i, len(body))
		}
		if !synced[path] || !synced[filepath.Dir(path)] {
			t.Errorf("Put of %s returned; synced %v, want the object and its directory", key, synced)
		}
		clear(synced)
		mu.Unlock()
		if got, err := os.ReadFile(path); err != nil || string(got) != body {
			t.Errorf("%s = %q, %v; want %q", key, got, err, body)
		}
	}
	infos, err := s.List(context.Background(), "chunks/", "", 0)
	if err != nil || len(infos) != 5 {
		t.Errorf("List = %v, %v; want the 5 objects and no spare", infos, err)
	}
}

// TestSpareExistingKey checks that a spare never takes the name of an
// object that exists (a fresh key's leftover): it replaces it atomically,
// as the ordinary path does, and a descriptor of the old object keeps
// reading the old bytes.
func TestSpareExistingKey(t *testing.T) {
	s, ctx := readySpares(t)
	if err := s.Put(context.Background(), "d/old", strings.NewReader("old"), 3); err != nil {
		t.Fatal(err)
	}
	held, err := os.Open(filepath.Join(s.Root(), "d/old"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	var used bool
	testHookSpareUsed = func(string) { used = true }
	t.Cleanup(func() { testHookSpareUsed = nil })
	if err := s.Put(ctx, "d/old", strings.NewReader("new!"), 4); err != nil {
		t.Fatal(err)
	}
	if used {
		t.Error("a spare was renamed onto an existing object without the ordinary path's sync first")
	}
	if b, err := io.ReadAll(held); err != nil || string(b) != "old" {
		t.Errorf("a descriptor of the replaced object reads %q, %v; want old", b, err)
	}
	if got, err := os.ReadFile(filepath.Join(s.Root(), "d/old")); err != nil || string(got) != "new!" {
		t.Errorf("object after the Put = %q, %v; want new!", got, err)
	}
}

// TestSpareFailedPut checks that a small fresh Put that fails on a spare
// leaves nothing under its key and uses up the spare.
func TestSpareFailedPut(t *testing.T) {
	s, ctx := readySpares(t)
	if err := s.Put(ctx, "d/short", bytes.NewReader([]byte("short")), 100); err == nil {
		t.Error("short fresh Put succeeded")
	}
	if err := s.Put(ctx, "d/long", bytes.NewReader([]byte("toolong")), 3); err == nil {
		t.Error("fresh Put with extra bytes succeeded")
	}
	for _, k := range []string{"d/short", "d/long"} {
		if _, err := os.Lstat(filepath.Join(s.Root(), k)); !os.IsNotExist(err) {
			t.Errorf("%s after a failed Put: %v, want no file", k, err)
		}
	}
}

// gatedReader gives its bytes only once gate is closed, or fails after a
// while.
type gatedReader struct {
	gate <-chan struct{}
	r    io.Reader
}

func (g gatedReader) Read(p []byte) (int, error) {
	select {
	case <-g.gate:
		return g.r.Read(p)
	case <-time.After(5 * time.Second):
		return 0, fmt.Errorf("the bytes were read before the spare's rename began")
	}
}

// TestSpareNamedBeforeWrite checks that a Put over a spare starts the
// rename to its key (and the directory's fsync after it) before it
// writes the bytes, so that the two branches overlap (spare.go): the
// Put's reader gives nothing until the rename has begun. It also checks
// that Put still returns only once both the object and the directory
// were synced.
func TestSpareNamedBeforeWrite(t *testing.T) {
	s, ctx := readySpares(t)
	naming := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	synced := map[string]bool{}
	testHookNaming = func(string) { once.Do(func() { close(naming) }) }
	testHookSynced = func(p string) { mu.Lock(); synced[p] = true; mu.Unlock() }
	t.Cleanup(func() { testHookNaming, testHookSynced = nil, nil })
	if err := s.Put(ctx, "d/3", gatedReader{naming, strings.NewReader("x")}, 1); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(s.Root(), "d/3")
	mu.Lock()
	defer mu.Unlock()
	if !synced[path] || !synced[filepath.Dir(path)] {
		t.Errorf("Put returned; synced %v, want the object and its directory", synced)
	}
}
