package object

import (
	"errors"
	"fmt"
	"io"
)

// encoder turns a body of n data bytes into the stored stream of a
// checksummed object: the header, then one record per segment. It reads
// exactly n bytes from src; a src that ends early fails the stream (and so
// the Put) with io.ErrUnexpectedEOF.
type encoder struct {
	key  string
	src  io.Reader
	n    int64
	buf  []byte // one record
	pend []byte // bytes of buf not yet delivered
	seg  int64  // next record to build; -1: the header is next
	pos  int64  // stored bytes delivered so far
	err  error  // sticky failure of src
}

// seekEncoder is an encoder over an io.Seeker body: it can be rewound to
// its start, which lets a retry wrapper replay it.
type seekEncoder struct {
	*encoder
	sk    io.Seeker
	start int64 // src position when the encoder was made
}

// newEncoder returns the stored stream of r (n bytes); seekable if r is.
func newEncoder(key string, r io.Reader, n int64) io.Reader {
	e := &encoder{key: key, src: r, n: n, seg: -1}
	if sk, ok := r.(io.Seeker); ok {
		if start, err := sk.Seek(0, io.SeekCurrent); err == nil {
			return &seekEncoder{encoder: e, sk: sk, start: start}
		}
	}
	return e
}

// Read implements io.Reader. A caller reading whole records at a time
// (the file store reads 1 MiB) gets them built in its buffer, without a
// copy through the encoder's own.
func (e *encoder) Read(p []byte) (int, error) {
	if len(e.pend) == 0 && e.err == nil && e.seg >= 0 && e.seg < segments(e.n) {
		done := 0
		for e.seg < segments(e.n) {
			dl := int(segmentLen(e.n, e.seg))
			if len(p)-done < dl+trailerSize {
				break
			}
			if err := e.record(p[done:]); err != nil {
				e.err = err
				break
			}
			done += dl + trailerSize
		}
		if done > 0 {
			e.pos += int64(done)
			return done, nil
		}
	}
	for len(e.pend) == 0 {
		if e.err != nil {
			return 0, e.err
		}
		if e.seg >= segments(e.n) {
			return 0, io.EOF
		}
		e.err = e.fill()
	}
	k := copy(p, e.pend)
	e.pend = e.pend[k:]
	e.pos += int64(k)
	return k, nil
}

// fill builds the next header or record into buf.
func (e *encoder) fill() error {
	if e.buf == nil {
		e.buf = make([]byte, min(recordSize, headerSize+e.n+trailerSize))
	}
	if e.seg < 0 {
		encodeHeader(e.buf, e.n)
		e.pend, e.seg = e.buf[:headerSize], 0
		return nil
	}
	dl := int(segmentLen(e.n, e.seg))
	if err := e.record(e.buf); err != nil {
		return err
	}
	e.pend = e.buf[:dl+trailerSize]
	return nil
}

// record builds the next record (segment e.seg's data and trailer) at the
// start of rec, which has room for it, and advances to the next segment.
func (e *encoder) record(rec []byte) error {
	dl := int(segmentLen(e.n, e.seg))
	if k, err := io.ReadFull(e.src, rec[:dl]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("checksum: put %q: body failed after %d of %d bytes: %w",
			e.key, e.seg*segmentSize+int64(k), e.n, err)
	}
	encodeTrailer(rec, e.seg, e.n, dl)
	e.seg++
	return nil
}

// Seek implements io.Seeker for what a replaying caller needs: the current
// position (Seek(0, io.SeekCurrent)) and a rewind to the start
// (Seek(0, io.SeekStart)), which also rewinds the body.
func (s *seekEncoder) Seek(off int64, whence int) (int64, error) {
	switch {
	case whence == io.SeekCurrent && off == 0:
		return s.pos, nil
	case whence == io.SeekStart && off == s.pos:
		return s.pos, nil
	case whence == io.SeekStart && off == 0:
		if _, err := s.sk.Seek(s.start, io.SeekStart); err != nil {
			return s.pos, err
		}
		s.pend, s.seg, s.pos, s.err = nil, -1, 0, nil
		return 0, nil
	}
	return s.pos, fmt.Errorf("checksum: put %q: cannot seek to %d (whence %d)", s.key, off, whence)
}
