package object

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Frame layout constants (see compress.go).
const (
	frameMagic      = "SHCZ"
	frameVersion    = 1
	frameHeaderSize = 20
	// MaxFrameData is the largest object WithCompress stores: blocks are
	// at most 4 MiB; the bound keeps a hostile header from asking a
	// decoder for gigabytes.
	MaxFrameData = 16 << 20
	// probeSize is the sample compressed first from blocks over
	// 4*probeSize bytes, to skip incompressible blocks cheaply.
	probeSize = 32 << 10
)

// frameHeader is a decoded frame header.
type frameHeader struct {
	alg Compression
	n   int    // data length
	p   int    // payload length
	sum uint32 // CRC32C of the data; 0 in raw frames
}

// zstd codecs: one of each, shared (EncodeAll and DecodeAll are safe for
// concurrent use). The checksum layer below verifies the stored bytes, so
// zstd's own content checksum is left out.
var (
	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
	zstdDec  *zstd.Decoder
	zstdErr  error
)

// zstdCodecs returns the shared codecs; the error (only possible for
// invalid options, which are constant) makes writes store raw frames and
// reads of zstd frames fail.
func zstdCodecs() (*zstd.Encoder, *zstd.Decoder, error) {
	zstdOnce.Do(func() {
		var e1, e2 error
		zstdEnc, e1 = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderCRC(false), zstd.WithWindowSize(512<<10))
		zstdDec, e2 = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(MaxFrameData),
			zstd.WithDecoderConcurrency(0))
		zstdErr = errors.Join(e1, e2)
	})
	return zstdEnc, zstdDec, zstdErr
}

// probePool recycles the buffers of worthTrying.
var probePool sync.Pool

// lz4Pool recycles lz4 compressors (each holds a hash table).
var lz4Pool = sync.Pool{New: func() any { return new(lz4.Compressor) }}

// encodeFrame appends the frame of data to dst: compressed with alg when
// that saves at least 1/16, else raw.
func encodeFrame(dst []byte, alg Compression, data []byte) []byte {
	h, payload := frameOf(dst[len(dst):], alg, data, false)
	var hdr [frameHeaderSize]byte
	putFrameHeader(hdr[:], h)
	out := append(dst, hdr[:]...)
	return append(out, payload...)
}

// frameOf returns the header and payload of data's frame: compressed into
// scratch (reused when large enough) with alg when that saves at least
// 1/16, else data itself (raw). probed says worthTrying already passed.
func frameOf(scratch []byte, alg Compression, data []byte, probed bool) (frameHeader, []byte) {
	if alg != CompressNone && (probed || worthTrying(alg, data)) {
		out := compressInto(scratch[:0], alg, data)
		if p := len(out); p > 0 && p <= len(data)-len(data)/16 {
			return frameHeader{alg: alg, n: len(data), p: p, sum: crc32.Checksum(data, castagnoli)}, out
		}
	}
	return frameHeader{alg: CompressNone, n: len(data), p: len(data)}, data
}

// worthTrying compresses a sample of a large block: if the sample does
// not shrink, neither will the block, most likely.
func worthTrying(alg Compression, data []byte) bool {
	if len(data) < 4*probeSize {
		return len(data) > 0
	}
	return compresses(alg, data[:probeSize])
}

// compresses reports whether sample shrinks by 1/16 with alg.
func compresses(alg Compression, sample []byte) bool {
	buf := poolBuf(&probePool, lz4.CompressBlockBound(len(sample)))
	defer probePool.Put(buf)
	out := compressInto((*buf)[:0], alg, sample)
	return len(out) > 0 && len(out) <= len(sample)-len(sample)/16
}

// compressInto appends data compressed with alg to dst, or returns dst
// unchanged when the codec gives up (incompressible).
func compressInto(dst []byte, alg Compression, data []byte) []byte {
	switch alg {
	case CompressZstd:
		enc, _, err := zstdCodecs()
		if err != nil {
			return dst
		}
		return enc.EncodeAll(data, dst)
	case CompressLZ4:
		bound := lz4.CompressBlockBound(len(data))
		if cap(dst)-len(dst) < bound {
			grown := make([]byte, len(dst), len(dst)+bound)
			copy(grown, dst)
			dst = grown
		}
		c := lz4Pool.Get().(*lz4.Compressor)
		defer lz4Pool.Put(c)
		k, err := c.CompressBlock(data, dst[len(dst):len(dst)+bound])
		if err != nil || k == 0 {
			return dst
		}
		return dst[:len(dst)+k]
	}
	return dst
}

// putFrameHeader writes h into b[:frameHeaderSize].
func putFrameHeader(b []byte, h frameHeader) {
	copy(b, frameMagic)
	b[4], b[5], b[6], b[7] = frameVersion, byte(h.alg), 0, 0
	binary.LittleEndian.PutUint32(b[8:], uint32(h.n))
	binary.LittleEndian.PutUint32(b[12:], uint32(h.p))
	binary.LittleEndian.PutUint32(b[16:], h.sum)
}

// frameCorrupt builds an ErrCorrupt error about key's frame.
func frameCorrupt(key, format string, args ...any) error {
	return Permanent(fmt.Errorf("compress: object %q: %s: %w", key, fmt.Sprintf(format, args...), ErrCorrupt))
}

// parseFrameHeader checks a frame header (the first frameHeaderSize bytes of b).
func parseFrameHeader(key string, b []byte) (frameHeader, error) {
	if len(b) < frameHeaderSize {
		return frameHeader{}, frameCorrupt(key, "%d bytes, shorter than a frame header", len(b))
	}
	h := frameHeader{
		alg: Compression(b[5]),
		n:   int(binary.LittleEndian.Uint32(b[8:])),
		p:   int(binary.LittleEndian.Uint32(b[12:])),
		sum: binary.LittleEndian.Uint32(b[16:]),
	}
	switch {
	case string(b[:4]) != frameMagic:
		return h, frameCorrupt(key, "bad magic %q (not a compressed-volume block)", b[:4])
	case b[4] != frameVersion || b[6]|b[7] != 0:
		return h, frameCorrupt(key, "unsupported frame version %d", b[4])
	case int(h.alg) >= len(compressionNames):
		return h, frameCorrupt(key, "unknown algorithm %d", b[5])
	case h.n > MaxFrameData || h.p > MaxFrameData:
		return h, frameCorrupt(key, "impossible lengths %d/%d", h.n, h.p)
	case h.alg == CompressNone && (h.p != h.n || h.sum != 0):
		return h, frameCorrupt(key, "raw frame of %d payload bytes for %d data bytes, checksum %#x", h.p, h.n, h.sum)
	}
	return h, nil
}

// decodeFrame returns the data of a whole frame. A raw frame's data
// aliases frame; otherwise it is new memory.
func decodeFrame(key string, frame []byte) ([]byte, error) {
	h, err := parseFrameHeader(key, frame)
	if err != nil {
		return nil, err
	}
	if len(frame) != frameHeaderSize+h.p {
		return nil, frameCorrupt(key, "%d stored bytes, header says %d", len(frame), frameHeaderSize+h.p)
	}
	payload := frame[frameHeaderSize:]
	var out []byte
	switch h.alg {
	case CompressNone:
		return payload, nil
	case CompressZstd:
		_, dec, cerr := zstdCodecs()
		if cerr != nil {
			return nil, fmt.Errorf("compress: object %q: zstd decoder: %w", key, cerr)
		}
		out, err = dec.DecodeAll(payload, make([]byte, 0, h.n))
	case CompressLZ4:
		out = make([]byte, h.n)
		var k int
		k, err = lz4.UncompressBlock(payload, out)
		out = out[:max(k, 0)]
	}
	if err != nil {
		return nil, frameCorrupt(key, "%s payload: %v", h.alg, err)
	}
	if len(out) != h.n {
		return nil, frameCorrupt(key, "%s payload decodes to %d bytes, header says %d", h.alg, len(out), h.n)
	}
	if crc32.Checksum(out, castagnoli) != h.sum {
		return nil, frameCorrupt(key, "%s payload decodes to bytes whose checksum differs", h.alg)
	}
	return out, nil
}

// frameReader is the stored stream of a frame given as header and payload
// (no copy of the payload into one buffer). It is an io.Seeker, so that a
// retry wrapper below replays it without buffering.
type frameReader struct {
	parts [2][]byte
	pos   int64
}

func newFrameReader(h frameHeader, payload []byte) *frameReader {
	hdr := make([]byte, frameHeaderSize)
	putFrameHeader(hdr, h)
	return &frameReader{parts: [2][]byte{hdr, payload}}
}

func (r *frameReader) size() int64 { return int64(len(r.parts[0]) + len(r.parts[1])) }

// Read implements io.Reader.
func (r *frameReader) Read(p []byte) (int, error) {
	if r.pos >= r.size() {
		return 0, io.EOF
	}
	part, off := r.parts[0], r.pos
	if off >= int64(len(part)) {
		part, off = r.parts[1], off-int64(len(part))
	}
	k := copy(p, part[off:])
	r.pos += int64(k)
	return k, nil
}

// Seek implements io.Seeker.
func (r *frameReader) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		off += r.pos
	case io.SeekEnd:
		off += r.size()
	}
	if off < 0 {
		return r.pos, fmt.Errorf("compress: seek to %d", off)
	}
	r.pos = off
	return off, nil
}

// rawStream is the stored stream of a raw frame whose body is streamed:
// the header, head (the body's first bytes, already read), then the rest
// of the body, exactly size bytes in all (a body that ends early fails
// the stream with io.ErrUnexpectedEOF). Over an io.Seeker body it can be
// rewound to its start, so a retry wrapper below replays it without
// buffering.
type rawStream struct {
	key   string
	hdr   [frameHeaderSize]byte
	head  []byte
	body  io.Reader
	sk    io.Seeker // nil: not rewindable
	start int64     // body position before head
	size  int64     // data bytes
	pos   int64     // stream bytes delivered
}

// newRawStream returns the stream; call it before head is read from body.
func newRawStream(key string, head []byte, body io.Reader, size int64) *rawStream {
	s := &rawStream{key: key, head: head, body: body, size: size}
	putFrameHeader(s.hdr[:], frameHeader{alg: CompressNone, n: int(size), p: int(size)})
	if sk, ok := body.(io.Seeker); ok {
		if at, err := sk.Seek(0, io.SeekCurrent); err == nil {
			s.sk, s.start = sk, at
		}
	}
	return s
}

// reader returns s, hidden behind a plain io.Reader when it cannot be
// rewound (so a retry wrapper buffers it instead of failing to seek).
func (s *rawStream) reader() io.Reader {
	if s.sk == nil {
		return struct{ io.Reader }{s}
	}
	return s
}

// Read implements io.Reader.
func (s *rawStream) Read(p []byte) (int, error) {
	fixed := int64(frameHeaderSize + len(s.head))
	switch {
	case s.pos >= frameHeaderSize+s.size:
		return 0, io.EOF
	case s.pos < frameHeaderSize:
		k := copy(p, s.hdr[s.pos:])
		s.pos += int64(k)
		return k, nil
	case s.pos < fixed:
		k := copy(p, s.head[s.pos-frameHeaderSize:])
		s.pos += int64(k)
		return k, nil
	}
	left := frameHeaderSize + s.size - s.pos
	k, err := s.body.Read(p[:min(int64(len(p)), left)])
	s.pos += int64(k)
	if errors.Is(err, io.EOF) {
		err = nil
		if k == 0 {
			err = fmt.Errorf("compress: put %q: body ended %d bytes short: %w", s.key, left, io.ErrUnexpectedEOF)
		}
	}
	return k, err
}

// Seek implements io.Seeker for what a replaying caller needs: the
// current position, and a rewind to the start, which rewinds the body to
// where it started (bodies such as the checksum encoder rewind only
// there) and reads head again.
func (s *rawStream) Seek(off int64, whence int) (int64, error) {
	switch {
	case whence == io.SeekCurrent && off == 0:
		return s.pos, nil
	case whence == io.SeekStart && off == 0 && s.sk != nil:
		if _, err := s.sk.Seek(s.start, io.SeekStart); err != nil {
			return s.pos, err
		}
		if err := readBody(s.key, s.body, s.head, 0, s.size); err != nil {
			return s.pos, err
		}
		s.pos = 0
		return 0, nil
	}
	return s.pos, fmt.Errorf("compress: put %q: cannot seek to %d (whence %d)", s.key, off, whence)
}
