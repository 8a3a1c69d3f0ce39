package filestore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"shoal/internal/object"
	"shoal/internal/object/objecttest"
)

// freshStore puts every object with object.WithFreshKey, as the data
// layer puts blocks. The conformance suite also overwrites keys, which a
// fresh key never is: those Puts must take the atomic path.
type freshStore struct{ *Store }

func (f freshStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	return f.Store.Put(object.WithFreshKey(ctx), key, r, size)
}

func TestConformanceFresh(t *testing.T) {
	objecttest.Run(t, func(t *testing.T) object.Store { return freshStore{newStore(t)} })
}

// gateReader hands out its bytes once release is closed, and tells
// reading when the Put first asks for them.
type gateReader struct {
	r        io.Reader
	reading  chan struct{}
	release  chan struct{}
	signaled bool
}

func (g *gateReader) Read(p []byte) (int, error) {
	if !g.signaled {
		g.signaled = true
		close(g.reading)
		<-g.release
	}
	return g.r.Read(p)
}

// TestFreshPutInPlace checks that a fresh key's object is written under
// its own name, with no temporary file and rename (what made the fsync of
// a small change cost two journal commits), and that it is whole once Put
// returns.
func TestFreshPutInPlace(t *testing.T) {
	s := newStore(t)
	key := "chunks/0/0/7_0_5"
	g := &gateReader{r: strings.NewReader("hello"), reading: make(chan struct{}), release: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- s.Put(object.WithFreshKey(context.Background()), key, g, 5) }()
	<-g.reading
	if _, err := os.Lstat(filepath.Join(s.Root(), key)); err != nil {
		t.Errorf("fresh Put in progress: the object is not being written in place: %v", err)
	}
	temps := 0
	filepath.WalkDir(s.Root(), func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), tmpPrefix) {
			temps++
		}
		return nil
	})
	if temps != 0 {
		t.Errorf("fresh Put in progress: %d temporary files, want none", temps)
	}
	close(g.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(s.Root(), key))
	if err != nil || string(got) != "hello" {
		t.Fatalf("object after fresh Put = %q, %v; want hello", got, err)
	}
}

// TestFreshPutFailures checks that a failed fresh Put leaves nothing
// under its key, and that a fresh Put of a key that exists after all
// replaces it atomically (the ordinary path).
func TestFreshPutFailures(t *testing.T) {
	s := newStore(t)
	ctx := object.WithFreshKey(context.Background())
	if err := s.Put(ctx, "x/short", bytes.NewReader([]byte("short")), 100); err == nil {
		t.Error("short fresh Put succeeded")
	}
	if err := s.Put(ctx, "x/long", bytes.NewReader([]byte("toolong")), 3); err == nil {
		t.Error("fresh Put with extra bytes succeeded")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Put(cctx, "x/cancelled", bytes.NewReader([]byte("abc")), 3); !errors.Is(err, context.Canceled) {
		t.Errorf("fresh Put with cancelled ctx = %v, want context.Canceled", err)
	}
	for _, k := range []string{"x/short", "x/long", "x/cancelled"} {
		if _, err := s.Head(context.Background(), k); !errors.Is(err, object.ErrNotExist) {
			t.Errorf("Head(%s) after a failed fresh Put = %v, want ErrNotExist", k, err)
		}
	}
	assertNoTemp(t, s)

	if err := s.Put(context.Background(), "x/old", strings.NewReader("old"), 3); err != nil {
		t.Fatal(err)
	}
	// A reader holding the old object keeps reading the old bytes.
	held, err := os.Open(filepath.Join(s.Root(), "x/old"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := s.Put(ctx, "x/old", strings.NewReader("new!"), 4); err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(held); err != nil || string(b) != "old" {
		t.Errorf("a descriptor of the replaced object reads %q, %v; want old (replaced, not rewritten)", b, err)
	}
	if got, err := os.ReadFile(filepath.Join(s.Root(), "x/old")); err != nil || string(got) != "new!" {
		t.Errorf("object after fresh Put over an existing one = %q, %v; want new!", got, err)
	}

	put := func(key string) error { return s.Put(ctx, key, bytes.NewReader([]byte("x")), 1) }
	if err := put("a/b"); err != nil {
		t.Fatal(err)
	}
	if err := put("a"); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("fresh Put(a) over directory a/ = %v, want ErrInvalidKey", err)
	}
	if err := put("a/b/c"); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("fresh Put(a/b/c) under file a/b = %v, want ErrInvalidKey", err)
	}
	assertNoTemp(t, s)
}

// TestFreshPutSyncs checks that a fresh Put returns only after both the
// object's bytes and its directory entry were synced: the engine commit
// that names the block follows the Put, and must never survive a power
// cut that the block does not.
func TestFreshPutSyncs(t *testing.T) {
	s := newStore(t)
	var mu sync.Mutex
	synced := map[string]bool{}
	testHookSynced = func(p string) {
		mu.Lock()
		synced[p] = true
		mu.Unlock()
	}
	t.Cleanup(func() { testHookSynced = nil })
	for _, key := range []string{"chunks/0/0/1_0_3", "chunks/0/0/2_0_3"} { // a new directory, then an existing one
		if err := s.Put(object.WithFreshKey(context.Background()), key, strings.NewReader("abc"), 3); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		path := filepath.Join(s.Root(), key)
		if !synced[path] || !synced[filepath.Dir(path)] {
			t.Errorf("fresh Put of %s returned; synced %v, want the object and its directory", key, synced)
		}
		clear(synced)
		mu.Unlock()
	}
}

// TestFreshPutExistingDir checks that a fresh Put into a directory that
// exists goes straight to creating its file: the directory is made (and
// its parents checked) only when the create finds it missing, not stat'ed
// before every Put.
func TestFreshPutExistingDir(t *testing.T) {
	s := newStore(t)
	var mu sync.Mutex
	var checked []string
	testHookEnsureDir = func(dir string) { mu.Lock(); checked = append(checked, dir); mu.Unlock() }
	t.Cleanup(func() { testHookEnsureDir = nil })
	ctx := object.WithFreshKey(context.Background())
	for i, key := range []string{"chunks/0/0/1_0_3", "chunks/0/0/2_0_3", "chunks/0/0/3_0_3"} {
		mu.Lock()
		checked = nil
		mu.Unlock()
		if err := s.Put(ctx, key, strings.NewReader("abc"), 3); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if i == 0 && len(checked) == 0 {
			t.Errorf("the first Put into a new directory made no directory")
		}
		if i > 0 && len(checked) != 0 {
			t.Errorf("Put %d into an existing directory checked directories %v, want none", i+1, checked)
		}
		mu.Unlock()
		if got, err := os.ReadFile(filepath.Join(s.Root(), key)); err != nil || string(got) != "abc" {
			t.Errorf("%s = %q, %v; want abc", key, got, err)
		}
	}
}
