package object

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Compressed objects (WithCompress).
//
// A volume formatted with --compress zstd or lz4 stores every block as a
// frame: a 20-byte header that says how the rest is encoded, then the
// payload. docs/format.md holds the normative copy; all integers are
// little-endian:
//
//	header   20 bytes: magic "SHCZ", version 1, algorithm (0 none, 1 zstd,
//	         2 lz4 block), 2 zero bytes, data length L (4 bytes), payload
//	         length P (4 bytes), CRC32C of the L data bytes (4 bytes; 0 in
//	         a raw frame); the frame is exactly 20+P bytes
//	payload  algorithm 0: the L data bytes as they are; 1: one zstd frame;
//	         2: one lz4 block (no lz4 frame header), each decoding to
//	         exactly L bytes with that CRC32C
//
// Every block is compressed on its own, and a block that does not shrink
// by at least 1/16 is stored raw (algorithm 0): a reader never guesses, and
// already-compressed data costs a 20-byte header and one trial, not a
// decompression on every read. The data CRC makes a compressed frame
// self-verifying (a decoder fed a damaged payload may produce bytes of the
// right length), so a decoder never hands the layer above wrong bytes; a
// raw frame needs none, its bytes being the data, which the checksum
// layer above verifies. The trial is cheap for such data: blocks
// over 128 KiB first compress a 32 KiB sample, and a sample that does not
// shrink sends the block raw without compressing the rest.
//
// The wrapper sits directly below the checksum wrapper (data → checksum →
// compress → store, volume.BlockStore): what it compresses is the
// checksummed stream of the block, so checksums are verified on the
// block's bytes after decompression, end to end, and a raw frame's
// checksum segments stay aligned with the data (a 4 KiB ranged read
// touches one segment, as on a plain volume; with the checksums below,
// the 20-byte header shifted one aligned read in four across two, which
// cost random reads about 22%). The decoders therefore see stored bytes
// no checksum vouched for yet, and treat every input as hostile (fuzzed:
// FuzzDecompressFrame): a malformed frame is ErrCorrupt, never a panic,
// never bytes of the wrong length or CRC.
//
// Ranged reads. A compressed block cannot be read by range without
// decompressing it, so the wrapper decompresses it whole and keeps the
// last few decoded blocks (compressCacheBytes) to serve further ranges of
// it: a random reader pays one fetch and one decompression per block, not
// one per read. The data layer fetches whole blocks for sequential reads
// (and caches them itself), so those decompress once. A raw frame is read
// by range as before, at offset 20; the wrapper remembers which keys hold
// raw frames, so only the first ranged read of such a block costs an extra
// Get of its header. A read from offset 0 fetches header and data in one
// Get.
//
// Rejected alternatives:
//   - Compressing each 16 KiB segment separately, like the checksum
//     records: cheap ranged reads, but a ratio far below whole-block zstd
//     (small windows), an index to find segments of varying size, and a
//     second format to keep in step with the checksum one.
//   - Guessing raw vs compressed from the payload (zstd magic): a raw
//     block that starts with those bytes would be misread.
//   - A volume-wide flag instead of a per-block algorithm byte: blocks
//     already stored could never be read after changing the setting, and
//     incompressible blocks would pay decompression.
//
// Sizes. Head reports the data length L (it reads the header); List
// reports stored frame sizes, which is what fsck and gc need and what
// status uses to compute the compression ratio. Objects are at most
// MaxFrameData bytes: a 4 MiB block checksummed is 4 MiB and 3 KiB.

// Compression names how a volume compresses its blocks.
type Compression uint8

// Compression algorithms, as stored in a frame's algorithm byte.
const (
	CompressNone Compression = 0 // stored as is
	CompressZstd Compression = 1 // zstd, fastest level
	CompressLZ4  Compression = 2 // lz4 block
)

// compressionNames are the names of the algorithms, by value.
var compressionNames = []string{"none", "zstd", "lz4"}

// String returns the algorithm's name.
func (c Compression) String() string {
	if int(c) < len(compressionNames) {
		return compressionNames[c]
	}
	return fmt.Sprintf("compression(%d)", uint8(c))
}

// ParseCompression parses a name from String ("" is none).
func ParseCompression(name string) (Compression, error) {
	if name == "" {
		return CompressNone, nil
	}
	for i, n := range compressionNames {
		if n == name {
			return Compression(i), nil
		}
	}
	return 0, fmt.Errorf("unknown compression %q: use none, zstd or lz4", name)
}

// compressStore is the wrapper WithCompress returns.
type compressStore struct {
	s     Store
	alg   Compression
	cache *frameCache
}

var (
	_ Store     = (*compressStore)(nil)
	_ Unwrapper = (*compressStore)(nil)
)

// WithCompress returns s with objects stored as frames (see above), new
// ones compressed with alg when that saves space. Reads understand every
// algorithm, whatever alg is. Objects must be at most MaxFrameData bytes.
// Objects already in s that are not frames read as ErrCorrupt.
func WithCompress(s Store, alg Compression) Store {
	return &compressStore{s: s, alg: alg, cache: newFrameCache(compressCacheBytes)}
}

// Unwrap returns the wrapped store.
func (c *compressStore) Unwrap() Store { return c.s }

// String implements Store.
func (c *compressStore) String() string { return c.alg.String() + "(" + c.s.String() + ")" }

// Delete implements Store.
func (c *compressStore) Delete(ctx context.Context, key string) error {
	c.cache.forget(key)
	return c.s.Delete(ctx, key)
}

// List implements Store, reporting stored frame sizes.
func (c *compressStore) List(ctx context.Context, prefix, after string, limit int) ([]Info, error) {
	return c.s.List(ctx, prefix, after, limit)
}

// Head implements Store, reporting the data length from the frame header.
func (c *compressStore) Head(ctx context.Context, key string) (Info, error) {
	info, err := c.s.Head(ctx, key)
	if err != nil {
		return info, err
	}
	h, err := c.header(ctx, key)
	if err != nil {
		return Info{}, err
	}
	info.Size = int64(h.n)
	return info, nil
}

// inPool recycles the buffers Put reads bodies into; framePool the frames
// it builds.
var inPool, framePool sync.Pool

func poolBuf(p *sync.Pool, n int) *[]byte {
	if b, ok := p.Get().(*[]byte); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n)
	return &b
}

// Put implements Store. A body of at least 4·probeSize bytes whose first
// probeSize bytes do not compress streams to the store as a raw frame,
// without being buffered; any other body is read whole, framed and
// stored.
func (c *compressStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if size < 0 || size > MaxFrameData {
		return Permanent(fmt.Errorf("compress: put %q: size %d out of range 0..%d", key, size, MaxFrameData))
	}
	c.cache.forget(key)
	in := poolBuf(&inPool, int(size))
	defer inPool.Put(in)
	probed := false
	if c.alg == CompressNone || size >= 4*probeSize {
		head := (*in)[:min(size, probeSize)]
		stream := newRawStream(key, head, r, size)
		if err := readBody(key, r, head, 0, size); err != nil {
			return err
		}
		if c.alg == CompressNone || !compresses(c.alg, head) {
			return c.s.Put(ctx, key, stream.reader(), frameHeaderSize+size)
		}
		probed = true
	}
	done := 0
	if probed {
		done = probeSize
	}
	if err := readBody(key, r, (*in)[done:], int64(done), size); err != nil {
		return err
	}
	out := poolBuf(&framePool, int(size))
	defer framePool.Put(out)
	h, payload := frameOf(*out, c.alg, *in, probed)
	if h.alg != CompressNone && cap(payload) > cap(*out) {
		*out = payload[:0] // the codec grew the scratch buffer: keep it
	}
	body := newFrameReader(h, payload)
	return c.s.Put(ctx, key, body, body.size())
}

// readBody fills p from r, the bytes of a body of size bytes from done.
func readBody(key string, r io.Reader, p []byte, done, size int64) error {
	if k, err := io.ReadFull(r, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("compress: put %q: body failed after %d of %d bytes: %w", key, done+int64(k), size, err)
	}
	return nil
}

// FrameStoredSizeOK reports whether stored can be the size of the frame
// of a block of n data bytes checksummed above the compression
// (WithChecksum over WithCompress): a header and a payload no longer than
// the checksummed block (a frame is never longer than the raw one).
func FrameStoredSizeOK(stored, n int64) bool {
	return stored >= FrameHeaderSize && stored <= FrameHeaderSize+StoredSize(n)
}

// FrameHeaderSize is the bytes a compression frame adds to its payload.
const FrameHeaderSize = frameHeaderSize
