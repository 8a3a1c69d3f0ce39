package object_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"shoal/internal/object"
	"shoal/internal/object/memstore"
)

// discardStore is a Store whose Put reads the body and keeps nothing,
// so a benchmark measures the wrapper's work alone.
type discardStore struct{ *memstore.Store }

func (d discardStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	_, err := io.CopyBuffer(io.Discard, r, make([]byte, 1<<20))
	return err
}

func benchPut(b *testing.B, s object.Store) {
	data := randData(1, 4<<20)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if err := s.Put(context.Background(), "chunks/1/0", bytes.NewReader(data), int64(len(data))); err != nil {
			b.Fatal(err)
		}
	}
}

func benchGet(b *testing.B, s object.Store) {
	data := randData(1, 4<<20)
	mustPut(b, s, "chunks/1/0", data)
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		rc, err := s.Get(context.Background(), "chunks/1/0", 0, -1)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.CopyBuffer(io.Discard, rc, buf); err != nil {
			b.Fatal(err)
		}
		rc.Close()
	}
}

func BenchmarkPutChecksum(b *testing.B) {
	benchPut(b, object.WithChecksum(discardStore{memstore.New()}))
}
func BenchmarkPutEncrypt(b *testing.B) {
	benchPut(b, sealedOver(b, discardStore{memstore.New()}, testKey(1)))
}
func BenchmarkGetChecksum(b *testing.B) { benchGet(b, object.WithChecksum(memstore.New())) }
func BenchmarkGetEncrypt(b *testing.B)  { benchGet(b, sealedOver(b, memstore.New(), testKey(1))) }
