package object

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// sealedPool recycles the one-record buffers of opening readers.
var sealedPool = sync.Pool{New: func() any { b := make([]byte, encRecordSize); return &b }}

// Get implements Store: one Get of the records covering [off, off+limit)
// (from the header when the range starts in the first segment), each
// opened before any of its bytes are returned.
func (e *encryptStore) Get(ctx context.Context, key string, off, limit int64) (io.ReadCloser, error) {
	if off < 0 {
		return nil, Permanent(fmt.Errorf("encryption: get %q: negative offset %d", key, off))
	}
	if limit > maxRangedLimit {
		limit = -1
	}
	if limit == 0 {
		if _, err := e.length(ctx, key); err != nil {
			return nil, err
		}
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	first := off / encSegment
	from := encRecordOffset(first)
	if first == 0 {
		from = 0
	}
	n, end := int64(-1), int64(-1)
	if limit > 0 {
		end = off + limit
		n = encRecordOffset((end-1)/encSegment+1) - from
	}
	rc, err := e.s.Get(ctx, key, from, n)
	if err != nil {
		return nil, err
	}
	return &openReader{e: e, ctx: ctx, key: key, rc: rc, buf: sealedPool.Get().(*[]byte),
		header: first == 0, rec: first, off: off, end: end, n: -1}, nil
}

// length reads the header of key and returns the data length.
func (e *encryptStore) length(ctx context.Context, key string) (int64, error) {
	rc, err := e.s.Get(ctx, key, 0, encHeaderSize)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	return readEncHeader(key, rc)
}

// readEncHeader reads and checks a header from r.
func readEncHeader(key string, r io.Reader) (int64, error) {
	var h [encHeaderSize]byte
	if k, err := io.ReadFull(r, h[:]); err != nil {
		if isEOF(err) {
			return 0, sealErr(key, -1, "object shorter than its header (%d bytes)", k)
		}
		return 0, err
	}
	return decodeEncHeader(key, h[:])
}

// openReader is the body an encrypted Get returns: it reads the stored
// stream a record at a time, opens it, and hands out the wanted part.
type openReader struct {
	e      *encryptStore
	ctx    context.Context
	key    string
	rc     io.ReadCloser // stored bytes, at the header or record rec
	buf    *[]byte       // one record, from sealedPool; nil once closed
	out    []byte        // opened bytes not yet returned
	header bool          // the header comes first in rc
	rec    int64         // next record in rc
	off    int64         // first data byte wanted
	end    int64         // data byte after the last wanted; -1: to the end
	n      int64         // data length; -1 until known
	err    error         // sticky: io.EOF or the failure
}

// Read implements io.Reader.
func (r *openReader) Read(p []byte) (int, error) {
	for len(r.out) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.buf == nil {
			return 0, fmt.Errorf("encryption: get %q: read after close", r.key)
		}
		r.err = r.next()
	}
	k := copy(p, r.out)
	r.out = r.out[k:]
	return k, nil
}

// Close implements io.Closer.
func (r *openReader) Close() error {
	if r.buf != nil {
		sealedPool.Put(r.buf)
		r.buf, r.out = nil, nil
	}
	return r.rc.Close()
}

// next opens the next record and sets out to its wanted bytes, or returns
// io.EOF or the failure.
func (r *openReader) next() error {
	if r.header {
		r.header = false
		n, err := readEncHeader(r.key, r.rc)
		if err != nil {
			return err
		}
		r.n = n
	}
	if r.n >= 0 {
		switch {
		case r.rec >= encRecords(r.n):
			return r.finish()
		case r.end >= 0 && r.rec*encSegment >= r.end, r.off >= r.n && r.rec > 0:
			return io.EOF
		}
	}
	data, err := r.readRecord()
	if err != nil {
		return err
	}
	start := r.rec * encSegment
	lo, hi := max(r.off-start, 0), int64(len(data))
	if r.end >= 0 {
		hi = min(hi, r.end-start)
	}
	if lo < hi {
		r.out = data[lo:hi]
	}
	r.rec++
	return nil
}

// finish runs after the last record: any stored byte beyond it is
// corruption (an extended object), else io.EOF.
func (r *openReader) finish() error {
	var extra [1]byte
	k, err := io.ReadFull(r.rc, extra[:])
	if k > 0 {
		return sealErr(r.key, r.rec, "object longer than its %d data bytes", r.n)
	}
	if err != nil && !isEOF(err) {
		return err
	}
	return io.EOF
}

// readRecord reads and opens record rec, returning its data.
func (r *openReader) readRecord() ([]byte, error) {
	want := encRecordSize
	if r.n >= 0 {
		want = int(encSegmentLen(r.n, r.rec)) + encOverhead
	}
	buf := (*r.buf)[:want]
	k, err := io.ReadFull(r.rc, buf)
	switch {
	case err == nil:
	case errors.Is(err, io.EOF) && r.n < 0:
		return nil, r.missingFirst()
	case isEOF(err) && r.n < 0 && k >= encOverhead:
		buf = buf[:k] // the last record, shorter than a full one
	case isEOF(err):
		return nil, sealErr(r.key, r.rec, "truncated: %d of %d record bytes", k, want)
	default:
		return nil, err
	}
	data, n, err := r.e.openRecord(buf, r.key, r.rec, r.n)
	if err != nil {
		return nil, err
	}
	r.n = n
	return data, nil
}

// missingFirst handles a ranged read that found no record where it
// started: past the end of the data (an empty read) or a truncated object.
// Only the header can tell, so it costs a second Get.
func (r *openReader) missingFirst() error {
	n, err := r.e.length(r.ctx, r.key)
	if err != nil {
		return err
	}
	r.n = n
	if r.off >= n && r.rec >= encRecords(n) {
		return r.finish()
	}
	return sealErr(r.key, r.rec, "truncated: record missing of %d data bytes", n)
}
