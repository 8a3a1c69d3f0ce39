package object

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
)

// Fuzz targets for the decoders of stored bytes in this package. Any
// input must give an error or the right bytes: never a panic, never
// bytes the encoder would not have stored them as. scripts/test.sh runs
// each for a few seconds ("fuzz" step).

// bytesStore is a one-object store over a byte slice, for fuzzing the
// wrappers' readers (memstore would be an import cycle here).
type bytesStore struct{ b []byte }

func (s *bytesStore) Get(_ context.Context, _ string, off, limit int64) (io.ReadCloser, error) {
	off = min(off, int64(len(s.b)))
	end := int64(len(s.b))
	if limit >= 0 {
		end = min(end, off+limit)
	}
	return io.NopCloser(bytes.NewReader(s.b[off:end])), nil
}

func (s *bytesStore) Put(context.Context, string, io.Reader, int64) error {
	return errors.ErrUnsupported
}
func (s *bytesStore) Delete(context.Context, string) error { return nil }
func (s *bytesStore) Head(_ context.Context, key string) (Info, error) {
	return Info{Key: key, Size: int64(len(s.b))}, nil
}
func (s *bytesStore) List(context.Context, string, string, int) ([]Info, error) { return nil, nil }
func (s *bytesStore) String() string                                            { return "bytes" }

// encodeChecksummed returns the stored form of data under WithChecksum.
func encodeChecksummed(t *testing.T, data []byte) []byte {
	b, err := io.ReadAll(newEncoder("k", bytes.NewReader(data), int64(len(data))))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readAllGet(s Store, off, limit int64) ([]byte, error) {
	rc, err := s.Get(context.Background(), "k", off, limit)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// FuzzChecksumVerify feeds arbitrary stored bytes to the checksum
// wrapper's reader. A whole read that succeeds must return data whose
// encoding is exactly the stored bytes; a ranged read that succeeds must
// agree with the whole read.
func FuzzChecksumVerify(f *testing.F) {
	t := &testing.T{}
	for _, n := range []int{0, 1, 100, segmentSize, segmentSize + 5} {
		data := bytes.Repeat([]byte{'a', 'b', 'c'}, n/3+1)[:n]
		f.Add(encodeChecksummed(t, data), int64(0), int64(-1))
		f.Add(encodeChecksummed(t, data), int64(n/2), int64(10))
	}
	f.Add([]byte("SHCK\x01\x00\x00\x00garbage"), int64(0), int64(-1))
	f.Fuzz(func(t *testing.T, stored []byte, off, limit int64) {
		s := WithChecksum(&bytesStore{b: stored})
		whole, werr := readAllGet(s, 0, -1)
		if werr == nil && !bytes.Equal(encodeChecksummed(t, whole), stored) {
			t.Fatalf("accepted %d stored bytes as %d data bytes that encode differently", len(stored), len(whole))
		}
		if werr != nil && !errors.Is(werr, ErrCorrupt) {
			t.Fatalf("whole read: %v is not ErrCorrupt", werr)
		}
		off = max(off, 0) % (int64(len(stored)) + 2)
		got, err := readAllGet(s, off, limit%(1<<20))
		if err == nil && werr == nil && !bytes.Equal(got, wantRange(whole, off, limit%(1<<20))) {
			t.Fatalf("range (%d, %d) differs from the whole read", off, limit)
		}
	})
}

func wantRange(data []byte, off, limit int64) []byte {
	n := int64(len(data))
	from, to := min(off, n), n
	if limit >= 0 {
		to = min(n, off+limit)
	}
	return data[from:max(from, to)]
}

// FuzzDecompressFrame feeds arbitrary frames to the compression
// wrapper's decoder: an error, or data of the header's length and CRC
// that every read of the frame agrees on.
func FuzzDecompressFrame(f *testing.F) {
	text := bytes.Repeat([]byte("shoal compresses blocks. "), 400)
	for _, alg := range []Compression{CompressNone, CompressZstd, CompressLZ4} {
		f.Add(encodeFrame(nil, alg, text), int64(0), int64(-1))
		f.Add(encodeFrame(nil, alg, text[:10]), int64(3), int64(4))
		f.Add(encodeFrame(nil, alg, nil), int64(0), int64(0))
	}
	f.Fuzz(func(t *testing.T, frame []byte, off, limit int64) {
		data, err := decodeFrame("k", frame)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%v is not ErrCorrupt", err)
			}
		} else {
			h, _ := parseFrameHeader("k", frame)
			if len(data) != h.n {
				t.Fatalf("decoded %d bytes, header says %d", len(data), h.n)
			}
		}
		s := WithCompress(&bytesStore{b: frame}, CompressZstd)
		off = max(off, 0) % (int64(len(frame)) + 2)
		limit %= 1 << 20
		got, gerr := readAllGet(s, off, limit)
		if err == nil && gerr == nil && !bytes.Equal(got, wantRange(data, off, limit)) {
			t.Fatalf("Get(%d, %d) differs from the decoded frame", off, limit)
		}
		if gerr != nil && !errors.Is(gerr, ErrCorrupt) {
			t.Fatalf("Get: %v is not ErrCorrupt", gerr)
		}
	})
}
