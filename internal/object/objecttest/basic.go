package objecttest

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"shoal/internal/object"
)

func testPutGet(t *testing.T, s object.Store) {
	data := randBytes(1, 10000)
	put(t, s, "chunks/0/1/123_0_4096", data)
	wantBytes(t, "whole object", get(t, s, "chunks/0/1/123_0_4096", 0, -1), data)
	put(t, s, "top", []byte("hello"))
	wantBytes(t, "top-level key", get(t, s, "top", 0, -1), []byte("hello"))
}

func testRanged(t *testing.T, s object.Store) {
	const size = 10000
	data := randBytes(2, size)
	put(t, s, "r/obj", data)
	cases := []struct{ off, limit, from, to int64 }{
		{0, -1, 0, size},
		{0, 1, 0, 1},
		{0, size, 0, size},
		{0, size + 100, 0, size},
		{1, -1, 1, size},
		{100, 200, 100, 300},
		{size - 1, -1, size - 1, size},
		{size - 1, 5, size - 1, size},
		{size - 10, 100, size - 10, size},
		{size, -1, size, size},
		{size, 10, size, size},
		{size + 5, -1, size, size},
		{size + 5, 10, size, size},
		{500, 0, 500, 500},
		{0, 0, 0, 0},
	}
	for _, c := range cases {
		what := fmt.Sprintf("Get(off=%d, limit=%d)", c.off, c.limit)
		wantBytes(t, what, get(t, s, "r/obj", c.off, c.limit), data[c.from:c.to])
	}
}

func testOverwrite(t *testing.T, s object.Store) {
	put(t, s, "o/key", randBytes(3, 5000))
	second := randBytes(4, 3000)
	put(t, s, "o/key", second)
	wantBytes(t, "after overwrite", get(t, s, "o/key", 0, -1), second)
	info, err := s.Head(ctxFor(t), "o/key")
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	if info.Size != int64(len(second)) {
		t.Fatalf("Head size after overwrite = %d, want %d", info.Size, len(second))
	}
	infos, err := s.List(ctxFor(t), "o/", "", 0)
	if err != nil || len(infos) != 1 || infos[0].Size != int64(len(second)) {
		t.Fatalf("List after overwrite = %+v, %v; want one object of %d bytes", infos, err, len(second))
	}
}

func testNotExist(t *testing.T, s object.Store) {
	ctx := ctxFor(t)
	_, err := s.Get(ctx, "missing/key", 0, -1)
	wantNotExist(t, "Get(missing)", err)
	_, err = s.Get(ctx, "missing/key", 10, 5)
	wantNotExist(t, "Get(missing, ranged)", err)
	_, err = s.Get(ctx, "missing/key", 0, 0)
	wantNotExist(t, "Get(missing, limit 0)", err)
	_, err = s.Head(ctx, "missing/key")
	wantNotExist(t, "Head(missing)", err)
	_, err = s.Head(ctx, "never")
	wantNotExist(t, "Head(never)", err)
	infos, err := s.List(ctx, "missing/", "", 0)
	if err != nil || len(infos) != 0 {
		t.Fatalf("List(missing/) = %v, %v; want empty", infos, err)
	}
}

func testDelete(t *testing.T, s object.Store) {
	ctx := ctxFor(t)
	if err := s.Delete(ctx, "d/absent"); err != nil {
		t.Fatalf("Delete(absent) = %v, want nil", err)
	}
	put(t, s, "d/x/1", []byte("one"))
	put(t, s, "d/x/2", []byte("two"))
	if err := s.Delete(ctx, "d/x/1"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	_, err := s.Get(ctx, "d/x/1", 0, -1)
	wantNotExist(t, "Get after Delete", err)
	_, err = s.Head(ctx, "d/x/1")
	wantNotExist(t, "Head after Delete", err)
	if err := s.Delete(ctx, "d/x/1"); err != nil {
		t.Fatalf("second Delete = %v, want nil", err)
	}
	wantBytes(t, "sibling after Delete", get(t, s, "d/x/2", 0, -1), []byte("two"))
	if err := s.Delete(ctx, "d/x/2"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	infos, err := s.List(ctx, "d/", "", 0)
	if err != nil || len(infos) != 0 {
		t.Fatalf("List after deleting all = %v, %v; want empty", infos, err)
	}
	// The key can be written again after deletion.
	put(t, s, "d/x/1", []byte("again"))
	wantBytes(t, "re-put after Delete", get(t, s, "d/x/1", 0, -1), []byte("again"))
}

func testHead(t *testing.T, s object.Store) {
	put(t, s, "h/a", randBytes(5, 1234))
	info, err := s.Head(ctxFor(t), "h/a")
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	if info.Key != "h/a" || info.Size != 1234 {
		t.Fatalf("Head = %+v, want key h/a size 1234", info)
	}
	if info.ModTime.IsZero() {
		t.Fatalf("Head ModTime is zero")
	}
}

func testEmpty(t *testing.T, s object.Store) {
	put(t, s, "e/empty", nil)
	wantBytes(t, "empty object", get(t, s, "e/empty", 0, -1), nil)
	wantBytes(t, "empty object past end", get(t, s, "e/empty", 5, 5), nil)
	info, err := s.Head(ctxFor(t), "e/empty")
	if err != nil || info.Size != 0 {
		t.Fatalf("Head(empty) = %+v, %v; want size 0", info, err)
	}
	infos, err := s.List(ctxFor(t), "e/", "", 0)
	if err != nil || len(infos) != 1 || infos[0].Key != "e/empty" || infos[0].Size != 0 {
		t.Fatalf("List(e/) = %+v, %v; want the empty object", infos, err)
	}
}

func testLarge(t *testing.T, s object.Store) {
	const size = 4 << 20
	data := randBytes(6, size)
	put(t, s, "chunks/0/0/7_0_4194304", data)
	wantBytes(t, "4 MiB object", get(t, s, "chunks/0/0/7_0_4194304", 0, -1), data)
	wantBytes(t, "4 MiB tail", get(t, s, "chunks/0/0/7_0_4194304", size-65536, -1), data[size-65536:])
	wantBytes(t, "4 MiB middle", get(t, s, "chunks/0/0/7_0_4194304", 1<<20, 1<<20), data[1<<20:2<<20])
	info, err := s.Head(ctxFor(t), "chunks/0/0/7_0_4194304")
	if err != nil || info.Size != size {
		t.Fatalf("Head(4 MiB) = %+v, %v", info, err)
	}
}

// testReadDuringOverwrite opens a reader, replaces the object, and checks
// the reader yields one version whole, never a mix of the two.
func testReadDuringOverwrite(t *testing.T, s object.Store) {
	old, repl := randBytes(11, 1<<20), randBytes(12, 1<<20)
	put(t, s, "w/key", old)
	rc, err := s.Get(ctxFor(t), "w/key", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	first := make([]byte, 1000)
	if _, err := io.ReadFull(rc, first); err != nil {
		t.Fatalf("read start: %v", err)
	}
	put(t, s, "w/key", repl)
	rest, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read rest after overwrite: %v", err)
	}
	got := append(first, rest...)
	if !bytes.Equal(got, old) && !bytes.Equal(got, repl) {
		t.Fatalf("reader open across an overwrite returned %d bytes matching neither version", len(got))
	}
	wantBytes(t, "new reader after overwrite", get(t, s, "w/key", 0, -1), repl)
}
