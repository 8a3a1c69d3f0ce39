package object_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"shoal/internal/object"
	"shoal/internal/object/memstore"
)

// textData returns n bytes of compressible text.
func textData(n int) []byte {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %d: the quick brown fox jumps over the lazy dog\n", i)
	}
	return []byte(b.String()[:n])
}

// newCompressed returns a compressing, checksumming store over memstore,
// the checksummed store below the compression (frames), and the raw one.
func newCompressed(alg object.Compression) (object.Store, object.Store, *memstore.Store) {
	raw := memstore.New()
	frames := object.WithChecksum(raw)
	return object.WithCompress(frames, alg), frames, raw
}

var algs = []object.Compression{object.CompressZstd, object.CompressLZ4}

func TestCompressRoundTripAndRanges(t *testing.T) {
	mixed := append(textData(2<<20), randData(3, 2<<20)...)
	inputs := map[string][]byte{
		"empty": {}, "one": {'x'}, "text": textData(4 << 20), "random": randData(1, 4<<20),
		"mixed": mixed, "small-text": textData(5000),
	}
	for _, alg := range algs {
		for name, in := range inputs {
			t.Run(alg.String()+"/"+name, func(t *testing.T) {
				s, _, _ := newCompressed(alg)
				mustPut(t, s, "k", in)
				n := int64(len(in))
				ranges := [][2]int64{{0, -1}, {0, n + 1}, {0, 1}, {1, 10}, {n / 2, 4096}, {max(n-1, 0), 5}, {n, 1}, {n + 7, -1}, {3, -1}, {0, 0}}
				for _, r := range ranges {
					got, err := read(s, "k", r[0], r[1])
					if err != nil {
						t.Fatalf("Get(%d, %d): %v", r[0], r[1], err)
					}
					if w := want(in, r[0], r[1]); !bytes.Equal(got, w) {
						t.Fatalf("Get(%d, %d): %d bytes, want %d (content differs: %v)", r[0], r[1], len(got), len(w), len(got) == len(w))
					}
				}
				info, err := s.Head(context.Background(), "k")
				if err != nil || info.Size != n {
					t.Fatalf("Head = %+v, %v; want size %d", info, err, n)
				}
			})
		}
	}
}

// TestCompressStoresIncompressibleRaw checks the algorithm byte of stored
// frames: random data raw (and no larger than data + header), text
// compressed well.
func TestCompressStoresIncompressibleRaw(t *testing.T) {
	for _, alg := range algs {
		s, frames, _ := newCompressed(alg)
		mustPut(t, s, "random", randData(9, 4<<20))
		mustPut(t, s, "text", textData(4<<20))
		r := rawBytes(t, frames, "random")
		if len(r) != 20+4<<20 || r[5] != 0 {
			t.Errorf("%s: random block stored as %d bytes, algorithm %d; want raw, %d bytes", alg, len(r), r[5], 20+4<<20)
		}
		x := rawBytes(t, frames, "text")
		if len(x) > 1<<20 || x[5] != byte(alg) {
			t.Errorf("%s: text block stored as %d bytes, algorithm %d; want compressed below 1 MiB", alg, len(x), x[5])
		}
	}
}

// TestCompressCorruptFrames damages stored frames (with no checksum layer
// below, so the frame decoder is what must notice) and expects ErrCorrupt
// from every read, never bytes.
func TestCompressCorruptFrames(t *testing.T) {
	text := textData(300 << 10)
	damage := map[string]func(b []byte) []byte{
		"magic":        func(b []byte) []byte { b[0] ^= 1; return b },
		"version":      func(b []byte) []byte { b[4] = 9; return b },
		"algorithm":    func(b []byte) []byte { b[5] = 7; return b },
		"length":       func(b []byte) []byte { b[8]++; return b },
		"truncated":    func(b []byte) []byte { return b[:len(b)-1] },
		"extended":     func(b []byte) []byte { return append(b, 0) },
		"payload":      func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b },
		"data-crc":     func(b []byte) []byte { b[16] ^= 1; return b },
		"header-only":  func(b []byte) []byte { return b[:20] },
		"shorter-than": func(b []byte) []byte { return b[:7] },
	}
	ctx := context.Background()
	for _, alg := range algs {
		for name, fn := range damage {
			t.Run(alg.String()+"/"+name, func(t *testing.T) {
				raw := memstore.New()
				s := object.WithCompress(raw, alg)
				mustPut(t, s, "k", text)
				b := rawBytes(t, raw, "k")
				if b[5] != byte(alg) {
					t.Fatalf("text stored with algorithm %d", b[5])
				}
				b = fn(b)
				if err := raw.Put(ctx, "k", bytes.NewReader(b), int64(len(b))); err != nil {
					t.Fatal(err)
				}
				s = object.WithCompress(raw, alg) // no cached copy
				for _, r := range [][2]int64{{0, -1}, {0, int64(len(text)) + 1}, {1000, 4096}} {
					got, err := read(s, "k", r[0], r[1])
					if !errors.Is(err, object.ErrCorrupt) {
						t.Fatalf("Get(%d, %d) = %d bytes, %v; want ErrCorrupt", r[0], r[1], len(got), err)
					}
				}
			})
		}
	}
}

// TestCompressChecksumBelowCatchesFlips flips a stored bit under the full
// stack: the checksum layer reports it before any decoding.
func TestCompressChecksumBelowCatchesFlips(t *testing.T) {
	s, _, raw := newCompressed(object.CompressZstd)
	mustPut(t, s, "k", textData(1<<20))
	b := rawBytes(t, raw, "k")
	b[100] ^= 4
	if err := raw.Put(context.Background(), "k", bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
	if _, err := read(s, "k", 0, -1); !errors.Is(err, object.ErrCorrupt) {
		t.Fatalf("read of a flipped block: %v, want ErrCorrupt", err)
	}
}

func TestParseCompression(t *testing.T) {
	for _, name := range []string{"none", "zstd", "lz4"} {
		c, err := object.ParseCompression(name)
		if err != nil || c.String() != name {
			t.Errorf("ParseCompression(%q) = %v, %v", name, c, err)
		}
	}
	if c, err := object.ParseCompression(""); err != nil || c != object.CompressNone {
		t.Errorf(`ParseCompression("") = %v, %v`, c, err)
	}
	if _, err := object.ParseCompression("gzip"); err == nil {
		t.Error("gzip accepted")
	}
}
