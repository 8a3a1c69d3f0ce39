package backup

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Magic numbers of the compressed formats Decompress recognises.
var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// Compress wraps w so that what is written to it is compressed as name's
// suffix says: ".gz" gzip, ".zst" zstd, anything else none. Close flushes
// the compressor; it does not close w.
func Compress(w io.Writer, name string) (io.WriteCloser, error) {
	switch {
	case strings.HasSuffix(name, ".gz"):
		return gzip.NewWriterLevel(w, gzip.DefaultCompression)
	case strings.HasSuffix(name, ".zst"):
		return zstd.NewWriter(w, zstd.WithEncoderCRC(true), zstd.WithEncoderConcurrency(1))
	}
	return nopCloser{w}, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// Decompress returns a reader of r's content, decompressed when it starts
// with a gzip or zstd magic number, as is otherwise.
func Decompress(r io.Reader) (io.ReadCloser, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(4)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("backup: reading the dump: %w", err)
	}
	switch {
	case bytes.HasPrefix(head, zstdMagic):
		d, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, fmt.Errorf("backup: zstd: %w", err)
		}
		return d.IOReadCloser(), nil
	case bytes.HasPrefix(head, gzipMagic):
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("backup: gzip: %w", err)
		}
		return z, nil
	}
	return io.NopCloser(br), nil
}

// Counter counts the bytes that pass through it; safe to read from
// another goroutine through Count.
type Counter struct {
	n atomic.Int64
}

// Count returns the bytes counted so far.
func (c *Counter) Count() int64 { return c.n.Load() }

// Writer returns w counting what is written to it.
func (c *Counter) Writer(w io.Writer) io.Writer { return countWriter{w, c} }

// Reader returns r counting what is read from it.
func (c *Counter) Reader(r io.Reader) io.Reader { return countReader{r, c} }

type countWriter struct {
	w io.Writer
	c *Counter
}

func (cw countWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.c.n.Add(int64(n))
	return n, err
}

type countReader struct {
	r io.Reader
	c *Counter
}

func (cr countReader) Read(p []byte) (int, error) {
	n, err := cr.r.Read(p)
	cr.c.n.Add(int64(n))
	return n, err
}
