package object

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
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
)

func zstdCodecs() (*zstd.Encoder, *zstd.Decoder) {
	zstdOnce.Do(func() {
		var err error
		zstdEnc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderCRC(false), zstd.WithSingleSegment(true))
		if err != nil {
			panic(err) // only for invalid options, which are constant
		}
		zstdDec, err = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(MaxFrameData),
			zstd.WithDecoderConcurrency(0))
		if err != nil {
			panic(err)
		}
	})
	return zstdEnc, zstdDec
}

// probePool recycles the buffers of worthTrying.
var probePool sync.Pool

// lz4Pool recycles lz4 compressors (each holds a hash table).
var lz4Pool = sync.Pool{New: func() any { return new(lz4.Compressor) }}

// encodeFrame appends the frame of data to dst: compressed with alg when
// that saves at least 1/16, else raw.
func encodeFrame(dst []byte, alg Compression, data []byte) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, frameHeaderSize)...)
	used := CompressNone
	if alg != CompressNone && worthTrying(alg, data) {
		out := compressInto(dst, alg, data)
		if p := len(out) - len(dst); p > 0 && p <= len(data)-len(data)/16 {
			dst, used = out, alg
		}
	}
	if used == CompressNone {
		dst = append(dst[:start+frameHeaderSize], data...)
	}
	h := frameHeader{alg: used, n: len(data), p: len(dst) - start - frameHeaderSize}
	if used != CompressNone {
		h.sum = crc32.Checksum(data, castagnoli)
	}
	putFrameHeader(dst[start:], h)
	return dst
}

// worthTrying compresses a sample of a large block: if the sample does
// not shrink, neither will the block, most likely.
func worthTrying(alg Compression, data []byte) bool {
	if len(data) < 4*probeSize {
		return len(data) > 0
	}
	buf := poolBuf(&probePool, lz4.CompressBlockBound(probeSize))
	defer probePool.Put(buf)
	out := compressInto((*buf)[:0], alg, data[:probeSize])
	return len(out) > 0 && len(out) <= probeSize-probeSize/16
}

// compressInto appends data compressed with alg to dst, or returns dst
// unchanged when the codec gives up (incompressible).
func compressInto(dst []byte, alg Compression, data []byte) []byte {
	switch alg {
	case CompressZstd:
		enc, _ := zstdCodecs()
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
		_, dec := zstdCodecs()
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
