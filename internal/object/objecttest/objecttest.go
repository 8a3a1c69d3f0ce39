package objecttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"testing"
	"time"

	"shoal/internal/object"
)

// Factory returns an empty store for one subtest. It registers any cleanup
// with t.Cleanup and fails t if the store cannot be made.
type Factory func(t *testing.T) object.Store

// Run runs the whole conformance suite against stores made by newStore.
func Run(t *testing.T, newStore Factory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s object.Store)
	}{
		{"PutGet", testPutGet},
		{"Ranged", testRanged},
		{"Overwrite", testOverwrite},
		{"ReadDuringOverwrite", testReadDuringOverwrite},
		{"NotExist", testNotExist},
		{"Delete", testDelete},
		{"Head", testHead},
		{"Empty", testEmpty},
		{"Large", testLarge},
		{"ListOrder", testListOrder},
		{"ListPrefixAfterLimit", testListPrefixAfterLimit},
		{"ListPaging", testListPaging},
		{"Concurrent", testConcurrent},
		{"FailedPut", testFailedPut},
		{"ShortPut", testShortPut},
		{"FailedOverwrite", testFailedOverwrite},
		{"String", testString},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
}

// ctxFor returns a context bounded so a hung backend fails the test rather
// than the whole test binary.
func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// randBytes returns n pseudo-random bytes that differ per seed.
func randBytes(seed int64, n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

// put stores data under key and fails the test on error.
func put(t *testing.T, s object.Store, key string, data []byte) {
	t.Helper()
	if err := s.Put(ctxFor(t), key, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("Put(%q, %d bytes): %v", key, len(data), err)
	}
}

// get reads a range and fails the test on error.
func get(t *testing.T, s object.Store, key string, off, limit int64) []byte {
	t.Helper()
	rc, err := s.Get(ctxFor(t), key, off, limit)
	if err != nil {
		t.Fatalf("Get(%q, %d, %d): %v", key, off, limit, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("Get(%q, %d, %d): read: %v", key, off, limit, err)
	}
	return data
}

// wantBytes compares with a short message instead of dumping megabytes.
func wantBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	t.Fatalf("%s: got %d bytes, want %d; first difference at byte %d", what, len(got), len(want), i)
}

// wantNotExist fails unless err matches object.ErrNotExist.
func wantNotExist(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, object.ErrNotExist) {
		t.Fatalf("%s: got error %v, want object.ErrNotExist", what, err)
	}
}

// wantAbsent checks that key is invisible to Get, Head and List.
func wantAbsent(t *testing.T, s object.Store, key string) {
	t.Helper()
	ctx := ctxFor(t)
	rc, err := s.Get(ctx, key, 0, -1)
	if err == nil {
		data, rerr := io.ReadAll(rc)
		rc.Close()
		t.Fatalf("Get(%q) after failed put: got %d bytes (read err %v), want ErrNotExist", key, len(data), rerr)
	}
	wantNotExist(t, fmt.Sprintf("Get(%q)", key), err)
	_, err = s.Head(ctx, key)
	wantNotExist(t, fmt.Sprintf("Head(%q)", key), err)
	infos, err := s.List(ctx, key, "", 0)
	if err != nil {
		t.Fatalf("List(%q): %v", key, err)
	}
	for _, in := range infos {
		if in.Key == key {
			t.Fatalf("List(%q) shows %q (size %d) after failed put", key, in.Key, in.Size)
		}
	}
}

func testString(t *testing.T, s object.Store) {
	if s.String() == "" {
		t.Fatal("String() is empty")
	}
}
