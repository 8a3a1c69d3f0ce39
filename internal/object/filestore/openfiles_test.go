package filestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"

	"shoal/internal/object"
)

// getRange reads n bytes at off of key through a small ranged Get.
func getRange(t *testing.T, s *Store, key string, off, n int64) ([]byte, error) {
	t.Helper()
	rc, err := s.Get(context.Background(), key, off, n)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func put(t *testing.T, s *Store, key string, data []byte) {
	t.Helper()
	if err := s.Put(context.Background(), key, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
}

// TestKeptFileSeesChanges: a descriptor kept for small reads never serves
// an object that was deleted, replaced or resized since, whether through
// the store or behind its back on disk.
func TestKeptFileSeesChanges(t *testing.T) {
	s := newStore(t)
	key := "chunks/0/1/7_0_8"
	put(t, s, key, []byte("abcdefgh"))
	if b, err := getRange(t, s, key, 2, 3); err != nil || string(b) != "cde" {
		t.Fatalf("first read = %q, %v", b, err)
	}

	// Replaced through the store.
	put(t, s, key, []byte("ABCDEFGH"))
	if b, err := getRange(t, s, key, 2, 3); err != nil || string(b) != "CDE" {
		t.Fatalf("after Put = %q, %v, want CDE", b, err)
	}

	// Replaced on disk by a rename over it (another process, a restore).
	path := s.path(key)
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte("01234567"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if b, err := getRange(t, s, key, 2, 3); err != nil || string(b) != "234" {
		t.Fatalf("after rename on disk = %q, %v, want 234", b, err)
	}

	// Truncated in place: the size check sees it.
	if err := os.Truncate(path, 4); err != nil {
		t.Fatal(err)
	}
	if b, err := getRange(t, s, key, 2, 3); err != nil || string(b) != "23" {
		t.Fatalf("after truncate = %q, %v, want 23", b, err)
	}

	// Removed on disk: ErrNotExist, not the old bytes.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if b, err := getRange(t, s, key, 0, 4); !errors.Is(err, object.ErrNotExist) {
		t.Fatalf("after remove on disk = %q, %v, want ErrNotExist", b, err)
	}

	// Deleted through the store.
	put(t, s, key, []byte("xyz"))
	if _, err := getRange(t, s, key, 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if _, err := getRange(t, s, key, 0, 1); !errors.Is(err, object.ErrNotExist) {
		t.Fatalf("after Delete: %v, want ErrNotExist", err)
	}
}

// TestKeptFilesBounded reads more objects than are kept open, and checks
// that evicted and reopened files read right and the count stays bounded.
func TestKeptFilesBounded(t *testing.T) {
	s := newStore(t)
	s.files.limit = 100
	const n = 150
	for i := range n {
		put(t, s, fmt.Sprintf("o/%d", i), []byte(fmt.Sprintf("object %d", i)))
	}
	for round := range 2 {
		for i := range n {
			b, err := getRange(t, s, fmt.Sprintf("o/%d", i), 1, 100)
			if err != nil || string(b) != fmt.Sprintf("object %d", i)[1:] {
				t.Fatalf("round %d object %d = %q, %v", round, i, b, err)
			}
		}
	}
	s.files.mu.Lock()
	kept, listed := len(s.files.m), s.files.lru.Len()
	s.files.mu.Unlock()
	if kept != 100 || listed != kept {
		t.Fatalf("kept %d files, %d listed; want 100", kept, listed)
	}
	if l := keptLimit(); l < 16 || l > maxOpenFiles {
		t.Fatalf("keptLimit() = %d", l)
	}
}

// TestWholeReadsNotKept: a Get of a whole small object reads it and
// leaves no descriptor open; a ranged Get of part of it keeps one.
func TestWholeReadsNotKept(t *testing.T) {
	s := newStore(t)
	put(t, s, "o/1", []byte("a whole object"))
	kept := func() int {
		s.files.mu.Lock()
		defer s.files.mu.Unlock()
		return len(s.files.m)
	}
	for _, limit := range []int64{14, 15, 100} {
		if b, err := getRange(t, s, "o/1", 0, limit); err != nil || string(b) != "a whole object" {
			t.Fatalf("whole Get with limit %d = %q, %v", limit, b, err)
		}
	}
	if n := kept(); n != 0 {
		t.Fatalf("%d descriptors kept after whole reads; want none", n)
	}
	if b, err := getRange(t, s, "o/1", 2, 5); err != nil || string(b) != "whole" {
		t.Fatalf("ranged Get = %q, %v", b, err)
	}
	if n := kept(); n != 1 {
		t.Fatalf("%d descriptors kept after a ranged read; want 1", n)
	}
}

// TestKeptFilesConcurrent reads, replaces and deletes objects from many
// goroutines (run with -race): every read returns a whole version of the
// object or ErrNotExist.
func TestKeptFilesConcurrent(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	const keys, workers, ops = 8, 8, 300
	versions := func(k int) [][]byte {
		return [][]byte{[]byte(fmt.Sprintf("v1 of %d", k)), []byte(fmt.Sprintf("v2 of %d", k))}
	}
	for k := range keys {
		put(t, s, fmt.Sprintf("k/%d", k), versions(k)[0])
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ops {
				k := (w + i) % keys
				key := fmt.Sprintf("k/%d", k)
				switch i % 7 {
				case 0:
					v := versions(k)[i%2]
					if err := s.Put(ctx, key, bytes.NewReader(v), int64(len(v))); err != nil {
						errs <- err
						return
					}
				case 1:
					if err := s.Delete(ctx, key); err != nil {
						errs <- err
						return
					}
				default:
					rc, err := s.Get(ctx, key, 0, 64)
					if errors.Is(err, object.ErrNotExist) {
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					b, err := io.ReadAll(rc)
					rc.Close()
					if err != nil {
						errs <- err
						return
					}
					if v := versions(k); !bytes.Equal(b, v[0]) && !bytes.Equal(b, v[1]) {
						errs <- fmt.Errorf("read %s = %q, not a version of it", key, b)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
