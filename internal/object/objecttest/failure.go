package objecttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"shoal/internal/object"
)

// errMidway is what failingReader returns after its good bytes.
var errMidway = errors.New("objecttest: reader failed midway")

// failingReader yields good bytes, then errMidway.
type failingReader struct{ r io.Reader }

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, errMidway
	}
	return n, err
}

func testFailedPut(t *testing.T, s object.Store) {
	for _, n := range []int{0, 1000, 2 << 20} {
		key := fmt.Sprintf("f/fail_%d", n)
		r := &failingReader{bytes.NewReader(randBytes(7, n))}
		if err := s.Put(ctxFor(t), key, r, 4<<20); err == nil {
			t.Fatalf("Put(%q) with reader failing after %d bytes returned nil", key, n)
		}
		wantAbsent(t, s, key)
	}
}

func testShortPut(t *testing.T, s object.Store) {
	key := "f/short"
	if err := s.Put(ctxFor(t), key, bytes.NewReader(randBytes(8, 100)), 200); err == nil {
		t.Fatalf("Put(%q) with 100 of 200 bytes returned nil", key)
	}
	wantAbsent(t, s, key)
}

func testFailedOverwrite(t *testing.T, s object.Store) {
	old := randBytes(9, 3000)
	put(t, s, "f/keep", old)
	r := &failingReader{bytes.NewReader(randBytes(10, 1500))}
	if err := s.Put(ctxFor(t), "f/keep", r, 3000); err == nil {
		t.Fatal("failing overwrite returned nil")
	}
	wantBytes(t, "object after failed overwrite", get(t, s, "f/keep", 0, -1), old)
}

func testConcurrent(t *testing.T, s object.Store) {
	const workers, perWorker = 8, 16
	ctx := ctxFor(t)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			errs <- concurrentWorker(ctx, s, w, perWorker)
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	keys := listKeys(t, s, "c/", "", 0, nil)
	if len(keys) != workers*perWorker {
		t.Fatalf("List after concurrent puts: %d keys, want %d", len(keys), workers*perWorker)
	}
}

// concurrentWorker puts its keys, reads each back, and reads a shared key
// that all workers overwrite with the same bytes.
func concurrentWorker(ctx context.Context, s object.Store, w, n int) error {
	shared := randBytes(99, 4096)
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("c/%d/%d", w, i)
		data := randBytes(int64(w*1000+i), 1000+i*100)
		if err := s.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
			return fmt.Errorf("Put(%q): %w", key, err)
		}
		if err := s.Put(ctx, "shared", bytes.NewReader(shared), int64(len(shared))); err != nil {
			return fmt.Errorf("Put(shared): %w", err)
		}
		if err := readBack(ctx, s, key, data); err != nil {
			return err
		}
		if err := readBack(ctx, s, "shared", shared); err != nil {
			return err
		}
	}
	return nil
}

func readBack(ctx context.Context, s object.Store, key string, want []byte) error {
	rc, err := s.Get(ctx, key, 0, -1)
	if err != nil {
		return fmt.Errorf("Get(%q): %w", key, err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("Get(%q): read: %w", key, err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("Get(%q): got %d bytes, want %d (or content differs)", key, len(got), len(want))
	}
	return nil
}
