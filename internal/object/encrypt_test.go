package object_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"golang.org/x/crypto/chacha20poly1305"

	"shoal/internal/object"
	"shoal/internal/object/filestore"
	"shoal/internal/object/memstore"
	"shoal/internal/object/objecttest"
)

const (
	encSeg    = 16 << 10 // data bytes per record of layout v1
	encHeader = 16
	encOver   = 8 + 24 + 16 // L, nonce, tag
)

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, object.KeySize) }

// newSealed returns an encrypting store over memstore, and the raw store.
func newSealed(t testing.TB, key []byte) (object.Store, *memstore.Store) {
	raw := memstore.New()
	s, err := object.WithEncryption(raw, key)
	if err != nil {
		t.Fatal(err)
	}
	return s, raw
}

func sealedOver(t testing.TB, raw object.Store, key []byte) object.Store {
	s, err := object.WithEncryption(raw, key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestEncryptionConformanceMem(t *testing.T) {
	objecttest.Run(t, func(t *testing.T) object.Store { s, _ := newSealed(t, testKey(1)); return s })
}

func TestEncryptionConformanceFile(t *testing.T) {
	objecttest.Run(t, func(t *testing.T) object.Store {
		fs, err := filestore.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return sealedOver(t, fs, testKey(1))
	})
}

func getAll(t testing.TB, s object.Store, key string, off, limit int64) ([]byte, error) {
	t.Helper()
	rc, err := s.Get(context.Background(), key, off, limit)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// TestEncryptionRoundTrip writes objects of sizes around the record
// boundaries and reads them whole and by range, and checks the stored size
// and that the stored bytes hold no run of the plaintext.
func TestEncryptionRoundTrip(t *testing.T) {
	s, raw := newSealed(t, testKey(1))
	ctx := context.Background()
	for _, n := range []int{0, 1, 100, encSeg - 1, encSeg, encSeg + 1, 3*encSeg + 7, 4 << 20} {
		data := randData(uint64(n), n)
		key := "chunks/x/" + string(rune('a'+n%26))
		mustPut(t, s, key, data)
		stored := rawBytes(t, raw, key)
		if int64(len(stored)) != object.EncryptedSize(int64(n)) {
			t.Fatalf("n=%d: stored %d bytes, want %d", n, len(stored), object.EncryptedSize(int64(n)))
		}
		if got, ok := object.EncryptedDataSize(int64(len(stored))); !ok || got != int64(n) {
			t.Fatalf("n=%d: EncryptedDataSize = %d, %v", n, got, ok)
		}
		if n >= 64 && bytes.Contains(stored, data[n/2:n/2+32]) {
			t.Fatalf("n=%d: stored bytes contain plaintext", n)
		}
		got, err := getAll(t, s, key, 0, -1)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("n=%d: whole read: %v (equal %v)", n, err, bytes.Equal(got, data))
		}
		info, err := s.Head(ctx, key)
		if err != nil || info.Size != int64(n) {
			t.Fatalf("n=%d: Head = %+v, %v", n, info, err)
		}
		checkRanges(t, s, key, data)
	}
}

// checkRanges reads ranges around record boundaries and past the end.
func checkRanges(t *testing.T, s object.Store, key string, data []byte) {
	t.Helper()
	n := int64(len(data))
	offs := []int64{0, 1, encSeg - 1, encSeg, encSeg + 5, n / 2, n - 1, n, n + 1, n + encSeg*3}
	for _, off := range offs {
		for _, limit := range []int64{-1, 0, 1, 4096, encSeg, encSeg + 1, 3 * encSeg} {
			if off < 0 {
				continue
			}
			got, err := getAll(t, s, key, off, limit)
			if err != nil {
				t.Fatalf("n=%d Get(%d, %d): %v", n, off, limit, err)
			}
			lo, hi := min(off, n), n
			if limit >= 0 {
				hi = min(n, off+limit)
			}
			want := data[lo:max(lo, hi)]
			if !bytes.Equal(got, want) {
				t.Fatalf("n=%d Get(%d, %d): %d bytes, want %d", n, off, limit, len(got), len(want))
			}
		}
	}
}

// TestEncryptionRejects checks that every way of handing the reader other
// bytes than were written under the key name and data key fails with
// ErrCorrupt, for whole and ranged reads.
func TestEncryptionRejects(t *testing.T) {
	data := randData(9, 3*encSeg+100)
	cases := map[string]func(s object.Store, raw *memstore.Store) object.Store{
		"wrong key": func(s object.Store, raw *memstore.Store) object.Store {
			return sealedOver(t, raw, testKey(2))
		},
		"moved to another key name": func(s object.Store, raw *memstore.Store) object.Store {
			b := rawBytes(t, raw, "blk")
			raw.Corrupt("blk", rawBytes(t, raw, "other"))
			raw.Corrupt("other", b)
			return s
		},
		"flipped ciphertext bit": func(s object.Store, raw *memstore.Store) object.Store {
			b := rawBytes(t, raw, "blk")
			b[encHeader+encOver+encSeg+100] ^= 1
			raw.Corrupt("blk", b)
			return s
		},
		"flipped nonce bit": func(s object.Store, raw *memstore.Store) object.Store {
			b := rawBytes(t, raw, "blk")
			b[encHeader+8+3] ^= 1
			raw.Corrupt("blk", b)
			return s
		},
		"length changed everywhere": func(s object.Store, raw *memstore.Store) object.Store {
			b := rawBytes(t, raw, "blk")
			l := uint64(len(data) - 1)
			binary.LittleEndian.PutUint64(b[8:], l)
			for i := 0; i < 4; i++ {
				binary.LittleEndian.PutUint64(b[encHeader+i*(encSeg+encOver):], l)
			}
			raw.Corrupt("blk", b[:len(b)-1])
			return s
		},
		"records swapped": func(s object.Store, raw *memstore.Store) object.Store {
			b := rawBytes(t, raw, "blk")
			r0 := bytes.Clone(b[encHeader : encHeader+encSeg+encOver])
			copy(b[encHeader:], b[encHeader+encSeg+encOver:encHeader+2*(encSeg+encOver)])
			copy(b[encHeader+encSeg+encOver:], r0)
			raw.Corrupt("blk", b)
			return s
		},
		"truncated at a record boundary": func(s object.Store, raw *memstore.Store) object.Store {
			b := rawBytes(t, raw, "blk")
			raw.Corrupt("blk", b[:encHeader+3*(encSeg+encOver)])
			return s
		},
		"extended": func(s object.Store, raw *memstore.Store) object.Store {
			raw.Corrupt("blk", append(rawBytes(t, raw, "blk"), 0))
			return s
		},
		"plain object": func(s object.Store, raw *memstore.Store) object.Store {
			raw.Corrupt("blk", data)
			return s
		},
	}
	for name, tamper := range cases {
		t.Run(name, func(t *testing.T) {
			s, raw := newSealed(t, testKey(1))
			mustPut(t, s, "blk", data)
			mustPut(t, s, "other", randData(10, len(data)))
			r := tamper(s, raw)
			if got, err := getAll(t, r, "blk", 0, -1); !errors.Is(err, object.ErrCorrupt) {
				t.Fatalf("whole read: %d bytes, err %v; want ErrCorrupt", len(got), err)
			}
			// A ranged read fails or returns the right bytes: it may
			// not reach the damage, never return other bytes.
			for _, rg := range [][2]int64{{encSeg * 3, -1}, {encSeg + 10, 100}, {0, 10}, {10, encSeg * 2}} {
				got, err := getAll(t, r, "blk", rg[0], rg[1])
				end := int64(len(data))
				if rg[1] >= 0 {
					end = rg[0] + rg[1]
				}
				if err == nil && !bytes.Equal(got, data[rg[0]:end]) {
					t.Fatalf("Get%v returned other bytes", rg)
				}
				if err != nil && !errors.Is(err, object.ErrCorrupt) {
					t.Fatalf("Get%v: %v; want ErrCorrupt", rg, err)
				}
			}
		})
	}
}

// TestEncryptionNonces checks that sealing the same data twice under the
// same key name gives different stored bytes, with distinct nonces in
// every record.
func TestEncryptionNonces(t *testing.T) {
	s, raw := newSealed(t, testKey(1))
	data := make([]byte, 8*encSeg)
	seen := map[string]bool{}
	for range 4 {
		mustPut(t, s, "blk", data)
		b := rawBytes(t, raw, "blk")
		for i := 0; i < 8; i++ {
			at := encHeader + i*(encSeg+encOver) + 8
			nonce := string(b[at : at+24])
			if seen[nonce] {
				t.Fatalf("nonce of record %d reused", i)
			}
			seen[nonce] = true
		}
	}
}

// TestEncryptionLayoutV1 opens an object with a reference decoder written
// from docs/format.md, pinning the on-disk layout.
func TestEncryptionLayoutV1(t *testing.T) {
	s, raw := newSealed(t, testKey(3))
	data := randData(4, encSeg+10)
	mustPut(t, s, "chunks/1/2", data)
	b := rawBytes(t, raw, "chunks/1/2")
	if string(b[:8]) != "SHEN\x01\x01\x00\x00" || binary.LittleEndian.Uint64(b[8:]) != uint64(len(data)) {
		t.Fatalf("header %x", b[:16])
	}
	aead, _ := chacha20poly1305.NewX(testKey(3))
	var got []byte
	rest := b[16:]
	for i := 0; len(rest) > 0; i++ {
		dl := min(encSeg, len(data)-i*encSeg)
		rec := rest[:dl+encOver]
		rest = rest[dl+encOver:]
		aad := append([]byte("SHEN\x01\x01\x00\x00"), binary.LittleEndian.AppendUint64(nil, uint64(i))...)
		aad = binary.LittleEndian.AppendUint64(aad, uint64(len(data)))
		aad = append(aad, "chunks/1/2"...)
		p, err := aead.Open(nil, rec[8:32], rec[32:], aad)
		if err != nil || binary.LittleEndian.Uint64(rec) != uint64(len(data)) {
			t.Fatalf("record %d: %v", i, err)
		}
		got = append(got, p...)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("reference decoder read other bytes")
	}
}

// TestEncryptionPutReplays checks that a retried Put (the body rewound
// through io.Seeker) stores a good object.
func TestEncryptionPutReplays(t *testing.T) {
	raw := memstore.New()
	flaky := object.WithFaults(raw)
	s := sealedOver(t, object.WithRetry(flaky, 3, 0), testKey(1))
	data := randData(5, 2*encSeg)
	flaky.DiePuts(1, encSeg+100)
	mustPut(t, s, "blk", data)
	if st := flaky.Stats(); st.Puts < 2 {
		t.Fatalf("no Put was replayed: %+v", st)
	}
	got, err := getAll(t, s, "blk", 0, -1)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back: %v", err)
	}
}

func TestEncryptionBadKey(t *testing.T) {
	if _, err := object.WithEncryption(memstore.New(), make([]byte, 16)); err == nil {
		t.Fatal("a 16-byte key was accepted")
	}
}
