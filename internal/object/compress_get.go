package object

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
)

// Read-side limits of WithCompress (see "Ranged reads" in compress.go).
const (
	compressCacheBytes = 32 << 20 // decoded blocks kept for ranged reads
	rawKeysMax         = 1 << 16  // keys remembered as raw frames
)

// Get implements Store. A read from offset 0 fetches the frame in one
// Get; a ranged read of a raw frame reads the range after the header; a
// ranged read of a compressed frame decompresses it whole, once, and
// serves this and later ranges from the decoded copy.
func (c *compressStore) Get(ctx context.Context, key string, off, limit int64) (io.ReadCloser, error) {
	if off < 0 {
		return nil, Permanent(fmt.Errorf("compress: get %q: negative offset %d", key, off))
	}
	if data, ok := c.cache.block(key); ok {
		return serve(data, off, limit), nil
	}
	if off == 0 {
		return c.getFromStart(ctx, key, limit)
	}
	if !c.cache.isRaw(key) {
		h, err := c.header(ctx, key)
		if err != nil {
			return nil, err
		}
		if h.alg != CompressNone {
			data, err := c.fetchDecoded(ctx, key, -1)
			if err != nil {
				return nil, err
			}
			c.cache.add(key, data)
			return serve(data, off, limit), nil
		}
		c.cache.markRaw(key)
	}
	return c.s.Get(ctx, key, frameHeaderSize+off, limit)
}

// getFromStart serves a read from offset 0 with one Get of 20+limit
// bytes (a compressed payload is no longer than its data, so that is the
// whole frame unless limit is short). A raw frame's data streams from the
// store's reader, without a copy; a compressed one is read and decoded.
func (c *compressStore) getFromStart(ctx context.Context, key string, limit int64) (io.ReadCloser, error) {
	n := int64(-1)
	if limit >= 0 && limit <= MaxFrameData {
		n = frameHeaderSize + limit
	}
	rc, err := c.s.Get(ctx, key, 0, n)
	if err != nil {
		return nil, err
	}
	var hb [frameHeaderSize]byte
	k, err := io.ReadFull(rc, hb[:])
	if err == nil {
		var h frameHeader
		if h, err = parseFrameHeader(key, hb[:]); err == nil && h.alg == CompressNone {
			c.cache.markRaw(key)
			want, whole := int64(h.n), limit < 0 || limit >= int64(h.n)
			if !whole {
				want = limit
			}
			return &rawReader{rc: rc, key: key, left: want, whole: whole}, nil
		}
		if err == nil {
			return c.compressedFromStart(ctx, key, rc, hb, h, n, limit)
		}
	}
	rc.Close()
	if isEOF(err) {
		err = frameCorrupt(key, "%d bytes, shorter than a frame header", k)
	}
	return nil, err
}

// compressedFromStart reads the rest of a compressed frame from rc (or
// again in full when n cut it short) and serves it decoded.
func (c *compressStore) compressedFromStart(ctx context.Context, key string, rc io.ReadCloser, hb [frameHeaderSize]byte, h frameHeader, n, limit int64) (io.ReadCloser, error) {
	var frame []byte
	if n >= 0 && n < int64(frameHeaderSize+h.p) {
		rc.Close()
		b, err := c.fetch(ctx, key, -1)
		if err != nil {
			return nil, err
		}
		frame = b
	} else {
		frame = make([]byte, frameHeaderSize+h.p, frameHeaderSize+h.p+1)
		copy(frame, hb[:])
		k, err := io.ReadFull(rc, frame[frameHeaderSize:cap(frame)])
		rc.Close()
		if err != nil && !isEOF(err) {
			return nil, err
		}
		frame = frame[:frameHeaderSize+k] // one byte too many or too few: decodeFrame says so
	}
	data, err := decodeFrame(key, frame)
	if err != nil {
		return nil, err
	}
	if limit >= 0 && limit < int64(len(data)) {
		c.cache.add(key, data)
	}
	return serve(data, 0, limit), nil
}

// rawReader streams the data of a raw frame after its header: left more
// bytes; with whole, the stream must end right after them. A stream that
// ends early, or runs on, is ErrCorrupt.
type rawReader struct {
	rc    io.ReadCloser
	key   string
	left  int64
	whole bool
	err   error
}

// Read implements io.Reader.
func (r *rawReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.left == 0 {
		r.err = io.EOF
		if r.whole {
			var extra [1]byte
			if k, _ := io.ReadFull(r.rc, extra[:]); k > 0 {
				r.err = frameCorrupt(r.key, "longer than its frame header says")
			}
		}
		return 0, r.err
	}
	k, err := r.rc.Read(p[:min(int64(len(p)), r.left)])
	r.left -= int64(k)
	if err != nil && isEOF(err) && r.left > 0 {
		err = frameCorrupt(r.key, "truncated: %d data bytes missing", r.left)
	}
	if err != nil && !isEOF(err) {
		r.err = err
		return k, err
	}
	return k, nil
}

// Close implements io.Closer.
func (r *rawReader) Close() error { return r.rc.Close() }

// fetchDecoded fetches and decodes a whole frame.
func (c *compressStore) fetchDecoded(ctx context.Context, key string, n int64) ([]byte, error) {
	frame, err := c.fetch(ctx, key, n)
	if err != nil {
		return nil, err
	}
	return decodeFrame(key, frame)
}

// header reads and checks key's frame header.
func (c *compressStore) header(ctx context.Context, key string) (frameHeader, error) {
	b, err := c.fetch(ctx, key, frameHeaderSize)
	if err != nil {
		return frameHeader{}, err
	}
	return parseFrameHeader(key, b)
}

// fetch reads up to n stored bytes of key from its start (n < 0: all of
// it, at most a maximal frame: a longer object is corrupt).
func (c *compressStore) fetch(ctx context.Context, key string, n int64) ([]byte, error) {
	rc, err := c.s.Get(ctx, key, 0, n)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if n < 0 {
		const most = frameHeaderSize + MaxFrameData
		b, err := io.ReadAll(io.LimitReader(rc, most+1))
		if err == nil && len(b) > most {
			err = frameCorrupt(key, "longer than the largest frame")
		}
		return b, err
	}
	b := make([]byte, n)
	k, err := io.ReadFull(rc, b)
	if isEOF(err) {
		err = nil
	}
	return b[:k], err
}

// serve returns a reader of data[off:off+limit] (limit < 0: to the end).
func serve(data []byte, off, limit int64) io.ReadCloser {
	off = min(off, int64(len(data)))
	end := int64(len(data))
	if limit >= 0 {
		end = min(end, off+limit)
	}
	return io.NopCloser(bytes.NewReader(data[off:end]))
}

// frameCache keeps decoded blocks (byte-bounded, least recently used out)
// and the set of keys known to hold raw frames. Objects are immutable, so
// an entry never goes stale; Put and Delete drop a key all the same, so
// a store reused across tests or volumes cannot serve a replaced object.
type frameCache struct {
	mu     sync.Mutex
	limit  int
	used   int
	blocks []cachedBlock // most recent first; a handful of entries
	raw    map[string]struct{}
}

type cachedBlock struct {
	key  string
	data []byte
}

func newFrameCache(limit int) *frameCache {
	return &frameCache{limit: limit, raw: map[string]struct{}{}}
}

// block returns key's decoded block, if cached.
func (f *frameCache) block(key string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, b := range f.blocks {
		if b.key == key {
			copy(f.blocks[1:i+1], f.blocks[:i])
			f.blocks[0] = b
			return b.data, true
		}
	}
	return nil, false
}

// add caches a decoded block, evicting the oldest to stay in the limit.
func (f *frameCache) add(key string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(data) > f.limit {
		return
	}
	f.dropLocked(key)
	for f.used+len(data) > f.limit {
		last := f.blocks[len(f.blocks)-1]
		f.blocks = f.blocks[:len(f.blocks)-1]
		f.used -= len(last.data)
	}
	f.blocks = append([]cachedBlock{{key, data}}, f.blocks...)
	f.used += len(data)
}

// isRaw reports whether key is known to hold a raw frame.
func (f *frameCache) isRaw(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.raw[key]
	return ok
}

// markRaw remembers that key holds a raw frame (forgetting all such keys
// when there are too many: a cheap bound on memory).
func (f *frameCache) markRaw(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.raw) >= rawKeysMax {
		clear(f.raw)
	}
	f.raw[key] = struct{}{}
}

// forget drops everything known about key.
func (f *frameCache) forget(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dropLocked(key)
	delete(f.raw, key)
}

func (f *frameCache) dropLocked(key string) {
	for i, b := range f.blocks {
		if b.key == key {
			f.used -= len(b.data)
			f.blocks = append(f.blocks[:i], f.blocks[i+1:]...)
			return
		}
	}
}
