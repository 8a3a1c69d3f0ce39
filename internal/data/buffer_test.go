package data

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"
)

func TestPageReader(t *testing.T) {
	const ps = 10
	want := pattern(1, 0, 35)
	var pages [][]byte
	for i := 0; i < len(want); i += ps {
		p := make([]byte, ps)
		copy(p, want[i:])
		pages = append(pages, p)
	}
	r := newPageReader(pages, ps, len(want))
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("ReadAll = %v, %v", got, err)
	}
	if _, err := r.Seek(7, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if r.Len() != 28 {
		t.Fatalf("Len after seek = %d", r.Len())
	}
	var out bytes.Buffer
	if n, err := r.WriteTo(&out); err != nil || n != 28 || !bytes.Equal(out.Bytes(), want[7:]) {
		t.Fatalf("WriteTo = %d, %v", n, err)
	}
	buf := make([]byte, 10)
	if n, err := r.ReadAt(buf, 30); n != 5 || err != io.EOF || !bytes.Equal(buf[:5], want[30:]) {
		t.Fatalf("ReadAt tail = %d, %v", n, err)
	}
	if _, err := r.Seek(-1, io.SeekCurrent); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Seek(-100, io.SeekEnd); err == nil {
		t.Fatal("negative seek accepted")
	}
}

// TestBufferPressureFreezesOthers: writer a fills the buffer with small
// open slices; writer b's Write must not wait for a's idle timer.
func TestBufferPressureFreezesOthers(t *testing.T) {
	s := newTestStore(t, newMem(), Config{BlockSize: 1 << 20, BufferSize: 8 * pageSize, IdleCommit: time.Hour})
	e := newEngine(nil)
	a := s.NewWriter(1, e.newID, e.committer(1))
	for i := 0; i < 8; i++ {
		writeAll(t, a, uint64(i)<<20, []byte("x"))
	}
	b := s.NewWriter(2, e.newID, e.committer(2))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.Write(ctx, 0, []byte("y")); err != nil {
		t.Fatalf("write under pressure from another writer: %v", err)
	}
	flush(t, b)
	flush(t, a)
}

// TestWriteFailsWhenStuck: with the buffer full of blocks that cannot be
// stored, Write reports the upload error instead of waiting forever.
func TestWriteFailsWhenStuck(t *testing.T) {
	fs := &failStore{Store: newMem()}
	fs.failing.Store(true)
	s := newTestStore(t, fs, Config{BlockSize: 4096, BufferSize: 64 << 10, IdleCommit: time.Hour})
	e := newEngine(nil)
	w := s.NewWriter(1, e.newID, e.committer(1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	for off := 0; off < 1<<20 && err == nil; off += 4096 {
		err = w.Write(ctx, uint64(off), pattern(1, uint64(off), 4096))
	}
	if err == nil || ctx.Err() != nil {
		t.Fatalf("write with a dead store: %v (ctx %v)", err, ctx.Err())
	}
	fs.failing.Store(false)
	flush(t, w)
}
