package pattern

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
)

// Period is the length after which a stream repeats. It is odd so that no
// power-of-two block size divides it.
const Period = 8<<20 + 4093

// ErrMismatch marks a verification failure: the bytes read are not the
// bytes written. Test for it with errors.Is.
var ErrMismatch = errors.New("data mismatch")

// MismatchError says where verification failed. It wraps ErrMismatch.
type MismatchError struct {
	Offset int64 // stream offset of the first wrong byte
}

// Error implements error.
func (e *MismatchError) Error() string {
	return fmt.Sprintf("%v at offset %d", ErrMismatch, e.Offset)
}

// Unwrap returns ErrMismatch.
func (e *MismatchError) Unwrap() error { return ErrMismatch }

// Pool holds the pseudo-random bytes all streams are cut from. It is
// read-only after New and safe for concurrent use.
type Pool struct {
	buf []byte // Period + max bytes; buf[Period+i] == buf[i]
	max int
}

// New returns a pool seeded by seed that serves slices of up to max bytes.
func New(seed uint64, max int) *Pool {
	if max < 1 {
		max = 1
	}
	buf := make([]byte, Period+max)
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	for i := 0; i+8 <= Period; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			buf[i+j] = byte(v >> (8 * j))
		}
	}
	for i := Period &^ 7; i < Period; i++ {
		buf[i] = byte(r.Uint32())
	}
	for i := Period; i < len(buf); i++ {
		buf[i] = buf[i-Period]
	}
	return &Pool{buf: buf, max: max}
}

// Max is the longest slice Bytes returns.
func (p *Pool) Max() int { return p.max }

// shift maps a key to its start position in the pool.
func (p *Pool) shift(key uint64) int64 {
	h := (key + 1) * 0x9E3779B97F4A7C15
	h ^= h >> 29
	return int64(h % Period)
}

// Bytes returns n bytes of stream key starting at offset off. The slice
// aliases the pool and must not be modified. n is clipped to Max.
func (p *Pool) Bytes(key uint64, off int64, n int) []byte {
	if n > p.max {
		n = p.max
	}
	s := (off + p.shift(key)) % Period
	return p.buf[s : s+int64(n)]
}

// Verify checks that got equals stream key at offset off. It returns a
// *MismatchError naming the first wrong byte, or nil.
func (p *Pool) Verify(key uint64, off int64, got []byte) error {
	for len(got) > 0 {
		n := min(len(got), p.max)
		want := p.Bytes(key, off, n)
		if !bytes.Equal(want, got[:n]) {
			return &MismatchError{Offset: off + int64(firstDiff(want, got[:n]))}
		}
		got, off = got[n:], off+int64(n)
	}
	return nil
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return len(a)
}
