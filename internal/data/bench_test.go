package data

import (
	"context"
	"io"
	"testing"

	"shoal/internal/meta"
	"shoal/internal/object"
)

const benchFile = 64 << 20 // one chunk

// BenchmarkSequentialWrite writes one chunk in 128 KiB writes (the FUSE
// write size) and flushes, with the default block size, into a store that
// discards the bytes (memstore's own copying would dominate).
func BenchmarkSequentialWrite(b *testing.B) {
	s := newTestStore(b, sinkStore{newMem()}, Config{})
	e := newEngine(nil)
	buf := pattern(1, 0, 128<<10)
	b.SetBytes(benchFile)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ino := meta.Ino(i + 1)
		w := s.NewWriter(ino, e.newID, e.committer(ino))
		for off := 0; off < benchFile; off += len(buf) {
			if err := w.Write(context.Background(), uint64(off), buf); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSequentialRead reads one chunk cold (a fresh Store, so an empty
// cache) in 128 KiB reads.
func BenchmarkSequentialRead(b *testing.B) {
	mem := newMem()
	e := newEngine(nil)
	writeFile(b, newTestStore(b, mem, Config{}), e, 1, pattern(2, 0, benchFile))
	slices := e.slices(1, 0)
	buf := make([]byte, 128<<10)
	b.SetBytes(benchFile)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := New(mem, Config{Logger: discardLogger()})
		r := s.NewReader(1)
		for off := 0; off < benchFile; off += len(buf) {
			if _, err := r.Read(context.Background(), 0, slices, uint32(off), buf); err != nil {
				b.Fatal(err)
			}
		}
		_ = s.Close()
	}
}

// BenchmarkRandomRead4K reads 4 KiB at scattered offsets of a cold file.
func BenchmarkRandomRead4K(b *testing.B) {
	mem := newMem()
	e := newEngine(nil)
	writeFile(b, newTestStore(b, mem, Config{}), e, 1, pattern(3, 0, benchFile))
	slices := e.slices(1, 0)
	s := newTestStore(b, mem, Config{})
	r := s.NewReader(1)
	buf := make([]byte, 4096)
	b.SetBytes(4096)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		off := uint32((i * 7919 * 4096) % (benchFile - 4096))
		if _, err := r.Read(context.Background(), 0, slices, off, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// sinkStore discards what is Put: it measures the data layer alone.
type sinkStore struct{ object.Store }

func (sinkStore) Put(_ context.Context, _ string, r io.Reader, size int64) error {
	_, err := io.CopyN(io.Discard, r, size)
	return err
}
