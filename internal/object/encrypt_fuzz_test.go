package object_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"shoal/internal/object"
	"shoal/internal/object/memstore"
)

// FuzzOpenSealed stores arbitrary bytes as an encrypted object and reads
// them back whole and by range: every read fails with ErrCorrupt or, when
// the bytes are a valid sealed object (the seeds), returns exactly what was
// sealed; never a panic, another error, or other bytes.
func FuzzOpenSealed(f *testing.F) {
	key := testKey(7)
	seeds := map[int][]byte{}
	for _, n := range []int{0, 5, encSeg, encSeg + 3} {
		s, raw := newSealed(f, key)
		data := randData(uint64(n), n)
		mustPut(f, s, "blk", data)
		stored := rawBytes(f, raw, "blk")
		seeds[len(stored)] = data
		f.Add(stored, int64(0), int64(-1))
		f.Add(stored, int64(3), int64(encSeg))
	}
	f.Add([]byte("SHEN\x01\x01\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00"), int64(0), int64(-1))
	f.Fuzz(func(t *testing.T, stored []byte, off, limit int64) {
		raw := memstore.New()
		if err := raw.Put(context.Background(), "blk", bytes.NewReader(stored), int64(len(stored))); err != nil {
			t.Fatal(err)
		}
		s := sealedOver(t, raw, key)
		off = max(0, off%(4*encSeg))
		whole, werr := getAll(t, s, "blk", 0, -1)
		part, perr := getAll(t, s, "blk", off, limit)
		for _, err := range []error{werr, perr} {
			if err != nil && !errors.Is(err, object.ErrCorrupt) {
				t.Fatalf("error not ErrCorrupt: %v", err)
			}
		}
		if werr != nil {
			return
		}
		if want, ok := seeds[len(stored)]; !ok || !bytes.Equal(whole, want) {
			t.Fatalf("opened %d bytes that were never sealed", len(whole))
		}
		if perr == nil {
			lo, hi := min(off, int64(len(whole))), int64(len(whole))
			if limit >= 0 && limit <= 1<<40 {
				hi = min(hi, off+limit)
			}
			if !bytes.Equal(part, whole[lo:max(lo, hi)]) {
				t.Fatalf("Get(%d, %d) disagrees with the whole read", off, limit)
			}
		}
	})
}
