package object

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// recordPool recycles the one-record buffers of checked readers.
var recordPool = sync.Pool{New: func() any { b := make([]byte, recordSize); return &b }}

// Get implements Store: one Get of the records covering [off, off+limit)
// (from the header when the range starts in the first segment), verified
// record by record before any of a record's bytes are returned.
func (c *checksumStore) Get(ctx context.Context, key string, off, limit int64) (io.ReadCloser, error) {
	if off < 0 {
		return nil, Permanent(fmt.Errorf("checksum: get %q: negative offset %d", key, off))
	}
	if limit == 0 {
		return c.getEmpty(ctx, key)
	}
	if limit > maxRangedLimit {
		limit = -1
	}
	first := off / segmentSize
	from := recordOffset(first)
	if first == 0 {
		from = 0
	}
	n, end := int64(-1), int64(-1)
	if limit > 0 {
		end = off + limit
		n = recordOffset((end-1)/segmentSize+1) - from
	}
	rc, err := c.s.Get(ctx, key, from, n)
	if err != nil {
		return nil, err
	}
	buf := recordPool.Get().(*[]byte)
	return &checkedReader{
		c: c, ctx: ctx, key: key, rc: rc, buf: buf,
		header: first == 0, seg: first, off: off, end: end, n: -1,
	}, nil
}

// getEmpty serves limit 0: it reads and checks the header, so an absent
// key is still ErrNotExist and a foreign object still ErrCorrupt.
func (c *checksumStore) getEmpty(ctx context.Context, key string) (io.ReadCloser, error) {
	if _, err := c.length(ctx, key); err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(nil)), nil
}

// length reads the header of key and returns the data length.
func (c *checksumStore) length(ctx context.Context, key string) (int64, error) {
	rc, err := c.s.Get(ctx, key, 0, headerSize)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	return readHeader(key, rc)
}

// readHeader reads and checks a header from r.
func readHeader(key string, r io.Reader) (int64, error) {
	var h [headerSize]byte
	if k, err := io.ReadFull(r, h[:]); err != nil {
		if isEOF(err) {
			return 0, corrupt(key, -1, "object shorter than its header (%d bytes)", k)
		}
		return 0, err
	}
	return decodeHeader(key, h[:])
}

func isEOF(err error) bool { return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) }

// checkedReader is the body a checksummed Get returns. It reads the stored
// stream one record at a time, verifies it, and hands out the requested
// part of its data.
type checkedReader struct {
	c      *checksumStore
	ctx    context.Context
	key    string
	rc     io.ReadCloser // stored bytes, positioned at the header or record seg
	buf    *[]byte       // one record, from recordPool; nil once closed
	out    []byte        // verified bytes not yet returned
	header bool          // the header comes first in rc
	seg    int64         // next record in rc
	off    int64         // first data byte wanted
	end    int64         // data byte after the last wanted; -1: to the end
	n      int64         // data length; -1 until known
	err    error         // sticky: io.EOF or the failure
}

// Read implements io.Reader.
func (r *checkedReader) Read(p []byte) (int, error) {
	for len(r.out) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.buf == nil {
			return 0, fmt.Errorf("checksum: get %q: read after close", r.key)
		}
		r.err = r.next()
	}
	k := copy(p, r.out)
	r.out = r.out[k:]
	return k, nil
}

// Close implements io.Closer.
func (r *checkedReader) Close() error {
	if r.buf != nil {
		recordPool.Put(r.buf)
		r.buf, r.out = nil, nil
	}
	return r.rc.Close()
}

// next verifies the next record and sets out to its wanted bytes, or
// returns io.EOF or the failure.
func (r *checkedReader) next() error {
	if r.header {
		r.header = false
		n, err := readHeader(r.key, r.rc)
		if err != nil {
			return err
		}
		r.n = n
	}
	if r.n >= 0 {
		switch {
		case r.seg >= segments(r.n):
			return r.finish()
		case r.end >= 0 && r.seg*segmentSize >= r.end, r.off >= r.n:
			return io.EOF
		}
	}
	data, err := r.readRecord()
	if err != nil {
		return err
	}
	start := r.seg * segmentSize
	lo, hi := max(r.off-start, 0), int64(len(data))
	if r.end >= 0 {
		hi = min(hi, r.end-start)
	}
	if lo < hi {
		r.out = data[lo:hi]
	}
	r.seg++
	return nil
}

// finish runs after the last record: any stored byte beyond it is
// corruption (an extended object), else io.EOF.
func (r *checkedReader) finish() error {
	var extra [1]byte
	k, err := io.ReadFull(r.rc, extra[:])
	if k > 0 {
		return corrupt(r.key, r.seg, "object longer than its %d data bytes", r.n)
	}
	if err != nil && !isEOF(err) {
		return err
	}
	return io.EOF
}

// readRecord reads and verifies record seg, returning its data.
func (r *checkedReader) readRecord() ([]byte, error) {
	want := recordSize
	if r.n >= 0 {
		want = int(segmentLen(r.n, r.seg)) + trailerSize
	}
	buf := (*r.buf)[:want]
	k, err := io.ReadFull(r.rc, buf)
	switch {
	case err == nil:
	case errors.Is(err, io.EOF) && r.n < 0:
		return nil, r.missingFirst()
	case isEOF(err) && r.n < 0 && k > trailerSize:
		buf = buf[:k] // the last record, shorter than a full one
	case isEOF(err):
		return nil, corrupt(r.key, r.seg, "truncated: %d of %d record bytes", k, want)
	default:
		return nil, err
	}
	return r.verify(buf)
}

// verify checks a whole record (data and trailer) and learns the length.
func (r *checkedReader) verify(rec []byte) ([]byte, error) {
	data := rec[:len(rec)-trailerSize]
	t := rec[len(data):]
	n := int64(binary.LittleEndian.Uint64(t))
	if recordCRC(r.seg, n, data) != binary.LittleEndian.Uint32(t[8:]) {
		return nil, corrupt(r.key, r.seg, "checksum mismatch")
	}
	if r.n >= 0 && n != r.n {
		return nil, corrupt(r.key, r.seg, "length %d differs from %d", n, r.n)
	}
	if n > 1<<62 || r.seg >= segments(n) || int64(len(data)) != segmentLen(n, r.seg) {
		return nil, corrupt(r.key, r.seg, "%d data bytes do not fit length %d", len(data), n)
	}
	r.n = n
	return data, nil
}

// missingFirst handles a ranged read that found no record at all where it
// started: past the end of the data (an empty read) or a truncated object.
// Only the header can tell, so it costs a second Get.
func (r *checkedReader) missingFirst() error {
	n, err := r.c.length(r.ctx, r.key)
	if err != nil {
		return err
	}
	r.n = n
	if r.off >= n {
		return r.finish()
	}
	return corrupt(r.key, r.seg, "truncated: record missing of %d data bytes", n)
}
