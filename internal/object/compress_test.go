package object_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

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

// newCompressed returns a checksumming, compressing store over memstore
// (the volume's stack, volume.BlockStore), and the raw store of frames.
func newCompressed(alg object.Compression) (object.Store, *memstore.Store) {
	raw := memstore.New()
	return object.WithChecksum(object.WithCompress(raw, alg)), raw
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
				s, _ := newCompressed(alg)
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
		s, raw := newCompressed(alg)
		mustPut(t, s, "random", randData(9, 4<<20))
		mustPut(t, s, "text", textData(4<<20))
		r := rawBytes(t, raw, "random")
		if want := 20 + object.StoredSize(4<<20); int64(len(r)) != want || r[5] != 0 {
			t.Errorf("%s: random block stored as %d bytes, algorithm %d; want raw, %d bytes", alg, len(r), r[5], want)
		}
		x := rawBytes(t, raw, "text")
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

// TestCompressFullStackCatchesFlips flips a stored bit of a compressed
// and of a raw frame under the volume's stack: ErrCorrupt, whole or by
// range, from the frame's CRC or the checksums above.
func TestCompressFullStackCatchesFlips(t *testing.T) {
	for name, in := range map[string][]byte{"text": textData(1 << 20), "random": randData(4, 1<<20)} {
		s, raw := newCompressed(object.CompressZstd)
		mustPut(t, s, "k", in)
		b := rawBytes(t, raw, "k")
		b[min(len(b)-1, 20+20+32*(seg+12)+100)] ^= 4 // in segment 32 of a raw frame
		if err := raw.Put(context.Background(), "k", bytes.NewReader(b), int64(len(b))); err != nil {
			t.Fatal(err)
		}
		s = object.WithChecksum(object.WithCompress(raw, object.CompressZstd)) // nothing cached
		for _, r := range [][2]int64{{0, -1}, {512 << 10, 4096}} {
			if got, err := read(s, "k", r[0], r[1]); !errors.Is(err, object.ErrCorrupt) {
				t.Errorf("%s: Get(%d, %d) of a flipped block: %d bytes, %v; want ErrCorrupt", name, r[0], r[1], len(got), err)
			}
		}
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

// halfFailStore reads half of the first Put's body, then fails it with a
// transient error; later Puts pass through.
type halfFailStore struct {
	object.Store
	failed bool
}

func (h *halfFailStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if !h.failed {
		h.failed = true
		_, _ = io.CopyN(io.Discard, r, size/2)
		return errors.New("connection reset")
	}
	return h.Store.Put(ctx, key, r, size)
}

// TestCompressPutReplays stores raw (streamed) and compressed frames
// through a retry wrapper whose first attempt dies half way: the retry
// must replay the whole frame, from a seekable body or not.
func TestCompressPutReplays(t *testing.T) {
	for name, in := range map[string][]byte{"random": randData(8, 1<<20), "text": textData(1 << 20)} {
		for _, seekable := range []bool{true, false} {
			raw := memstore.New()
			s := object.WithChecksum(object.WithCompress(object.WithRetry(&halfFailStore{Store: raw}, 3, time.Millisecond), object.CompressZstd))
			var body io.Reader = bytes.NewReader(in)
			if !seekable {
				body = struct{ io.Reader }{body}
			}
			if err := s.Put(context.Background(), "k", body, int64(len(in))); err != nil {
				t.Fatalf("%s (seekable %v): %v", name, seekable, err)
			}
			if got, err := read(s, "k", 0, -1); err != nil || !bytes.Equal(got, in) {
				t.Fatalf("%s (seekable %v): read back %d bytes, %v", name, seekable, len(got), err)
			}
		}
	}
	s, _ := newCompressed(object.CompressZstd)
	short := io.LimitReader(bytes.NewReader(randData(9, 1<<20)), 1<<19)
	if err := s.Put(context.Background(), "k", short, 1<<20); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Put of a body shorter than its size: %v, want io.ErrUnexpectedEOF", err)
	}
}
