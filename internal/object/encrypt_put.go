package object

import (
	"errors"
	"fmt"
	"io"
)

// sealer turns a body of n data bytes into the stored stream of an
// encrypted object: the header, then one sealed record per segment. It
// reads exactly n bytes from src; a src that ends early fails the stream
// (and so the Put) with io.ErrUnexpectedEOF. Only one record is buffered.
type sealer struct {
	e    *encryptStore
	key  string
	src  io.Reader
	n    int64
	buf  []byte // one record
	pend []byte // bytes of buf not yet delivered
	rec  int64  // next record to build; -1: the header is next
	pos  int64  // stored bytes delivered so far
	err  error  // sticky failure
}

// seekSealer is a sealer over an io.Seeker body: rewinding it to its
// start lets a retry wrapper below replay the Put (with fresh nonces).
type seekSealer struct {
	*sealer
	sk    io.Seeker
	start int64
}

// newSealer returns the stored stream of r (n bytes); seekable if r is.
func newSealer(e *encryptStore, key string, r io.Reader, n int64) io.Reader {
	s := &sealer{e: e, key: key, src: r, n: n, rec: -1}
	if sk, ok := r.(io.Seeker); ok {
		if start, err := sk.Seek(0, io.SeekCurrent); err == nil {
			return &seekSealer{sealer: s, sk: sk, start: start}
		}
	}
	return s
}

// Read implements io.Reader. A caller reading whole records at a time
// (the file store reads 1 MiB) gets them sealed in its buffer, without a
// copy through the sealer's own.
func (s *sealer) Read(p []byte) (int, error) {
	if done := s.direct(p); done > 0 {
		s.pos += int64(done)
		return done, nil
	}
	for len(s.pend) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		if s.rec >= encRecords(s.n) {
			return 0, io.EOF
		}
		s.err = s.fill()
	}
	k := copy(p, s.pend)
	s.pend = s.pend[k:]
	s.pos += int64(k)
	return k, nil
}

// direct seals as many whole records as fit into p, returning the bytes
// written (0 when none fits, or at the header, or after a failure).
func (s *sealer) direct(p []byte) int {
	done := 0
	for len(s.pend) == 0 && s.err == nil && s.rec >= 0 && s.rec < encRecords(s.n) {
		dl := int(encSegmentLen(s.n, s.rec))
		if len(p)-done < dl+encOverhead {
			break
		}
		if s.err = s.record(p[done:]); s.err != nil {
			break
		}
		done += dl + encOverhead
	}
	return done
}

// fill builds the header or the next record into buf.
func (s *sealer) fill() error {
	if s.buf == nil {
		s.buf = make([]byte, encHeaderSize+min(encRecordSize, s.n+encOverhead))
	}
	if s.rec < 0 {
		encodeEncHeader(s.buf, s.n)
		s.pend, s.rec = s.buf[:encHeaderSize], 0
		return nil
	}
	dl := int(encSegmentLen(s.n, s.rec))
	if err := s.record(s.buf); err != nil {
		return err
	}
	s.pend = s.buf[:dl+encOverhead]
	return nil
}

// record reads the next segment from src and seals it as record s.rec at
// the start of rec, which has room for it, and advances.
func (s *sealer) record(rec []byte) error {
	dl := int(encSegmentLen(s.n, s.rec))
	data := rec[8+encNonceSize : 8+encNonceSize+dl]
	if k, err := io.ReadFull(s.src, data); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("encryption: put %q: body failed after %d of %d bytes: %w",
			s.key, s.rec*encSegment+int64(k), s.n, err)
	}
	if err := s.e.sealRecord(rec, s.key, s.rec, s.n, data); err != nil {
		return err
	}
	s.rec++
	return nil
}

// Seek implements io.Seeker for what a replaying caller needs: the current
// position and a rewind to the start (which also rewinds the body).
func (s *seekSealer) Seek(off int64, whence int) (int64, error) {
	switch {
	case whence == io.SeekCurrent && off == 0:
		return s.pos, nil
	case whence == io.SeekStart && off == s.pos:
		return s.pos, nil
	case whence == io.SeekStart && off == 0:
		if _, err := s.sk.Seek(s.start, io.SeekStart); err != nil {
			return s.pos, err
		}
		s.pend, s.rec, s.pos, s.err = nil, -1, 0, nil
		return 0, nil
	}
	return s.pos, fmt.Errorf("encryption: put %q: cannot seek to %d (whence %d)", s.key, off, whence)
}
