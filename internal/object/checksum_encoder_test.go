package object

import (
	"bytes"
	"io"
	"testing"
)

// TestEncoderReadSizes checks that the stored stream does not depend on
// how the caller reads it: whole records built in the caller's buffer
// (the fast path) and records copied through the encoder's own buffer
// give the same bytes, for bodies around segment boundaries, and a short
// body fails either way.
func TestEncoderReadSizes(t *testing.T) {
	for _, n := range []int{0, 1, segmentSize - 1, segmentSize, segmentSize + 1, 3*segmentSize + 17, 1 << 20, 4<<20 - 3} {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(i*7 + i>>9)
		}
		var want []byte
		for _, step := range []int{1, 100, recordSize - 1, recordSize, recordSize + 1, 2*recordSize + 5, 1 << 20} {
			e := newEncoder("k", bytes.NewReader(body), int64(n))
			var got bytes.Buffer
			buf := make([]byte, step)
			for {
				k, err := e.Read(buf)
				got.Write(buf[:k])
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("n=%d step=%d: %v", n, step, err)
				}
			}
			if want == nil {
				want = got.Bytes()
				continue
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("n=%d: stream read %d bytes at a time differs from 1 byte at a time", n, step)
			}
		}
		if n == 0 {
			continue
		}
		for _, step := range []int{100, 1 << 20} {
			e := newEncoder("k", bytes.NewReader(body[:n-1]), int64(n))
			_, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{e}, make([]byte, step))
			if err == nil {
				t.Fatalf("n=%d step=%d: short body encoded without error", n, step)
			}
		}
	}
}
