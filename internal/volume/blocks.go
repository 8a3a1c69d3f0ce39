package volume

import (
	"context"
	"fmt"

	"shoal/internal/data"
	"shoal/internal/meta"
	"shoal/internal/object"
)

// BlockStore returns the store the volume's blocks go through, over plain
// (the retrying store). On a plain volume: block checksums above
// compression, when the format asks for it (data → checksum → compress →
// store): the checksums cover the block's own bytes, verified after
// decompression, and a raw frame keeps its checksum segments aligned with
// the data, so a ranged read of it costs what it costs on a plain volume.
// On an encrypted volume (dataKey set), compression comes first and the
// seal below it (data → compress → encrypt → store): the cipher sees only
// compressed bytes, and its tags authenticate every stored byte, so there
// are no checksums (a frame also carries a CRC of its decoded bytes).
// Mounts, fsck and the tests all build it here.
func BlockStore(plain object.Store, f meta.Format, dataKey []byte) (object.Store, error) {
	alg, err := Compression(f)
	if err != nil {
		return nil, err
	}
	s := plain
	if dataKey != nil {
		if s, err = object.WithEncryption(s, dataKey); err != nil {
			return nil, err
		}
	}
	if alg != object.CompressNone {
		s = object.WithCompress(s, alg)
	}
	if dataKey == nil {
		s = object.WithChecksum(s)
	}
	return s, nil
}

// StoredSizeOK returns what fsck checks a block's stored size with: the
// one size a checksummed or sealed block of n bytes takes, or, with
// compression, the range its frame can take (a header, and a payload
// never longer than the raw block), sealed or not.
func StoredSizeOK(f meta.Format) func(stored, n int64) bool {
	sealed := f.Encryption != nil
	switch {
	case f.Compression == "" && !sealed:
		return func(stored, n int64) bool { return stored == object.StoredSize(n) }
	case f.Compression == "":
		return func(stored, n int64) bool { return stored == object.EncryptedSize(n) }
	case !sealed:
		return object.FrameStoredSizeOK
	}
	return func(stored, n int64) bool {
		return stored >= object.EncryptedSize(object.FrameHeaderSize) && stored <= object.EncryptedSize(object.FrameHeaderSize+n)
	}
}

// Compression returns the block compression of a volume's format.
func Compression(f meta.Format) (object.Compression, error) {
	alg, err := object.ParseCompression(f.Compression)
	if err != nil {
		return 0, fmt.Errorf("volume %q: %w (a newer binary formatted it?)", f.Name, err)
	}
	return alg, nil
}

// setCompression records o's compression in a new format f, and makes a
// compressed volume version 3 (older binaries refuse it); it refuses to
// switch an existing volume (old) between plain blocks and frames: its
// stored blocks would no longer read.
func setCompression(f *meta.Format, name string, old *meta.Format) error {
	alg, err := object.ParseCompression(name)
	if err != nil {
		return err
	}
	f.Compression, f.Version = "", meta.PlainFormatVersion
	if alg != object.CompressNone {
		f.Compression, f.Version = alg.String(), meta.CurrentFormatVersion
	}
	if old != nil && (old.Compression == "") != (f.Compression == "") {
		return fmt.Errorf("cannot change the compression of volume %q from %s to %s: its stored blocks would no longer read (between zstd and lz4 is fine)",
			old.Name, orNone(old.Compression), alg)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// CompressionUsage is what MeasureCompression found: the data bytes of
// the block objects it listed (from their keys) and the bytes they take
// in the store (from the listing, checksums and frame headers included).
type CompressionUsage struct {
	Objects  int64   `json:"objects"`
	Data     int64   `json:"data_bytes"`
	Stored   int64   `json:"stored_bytes"`
	Ratio    float64 `json:"ratio"`    // Data / Stored; 0 when nothing is stored
	Complete bool    `json:"complete"` // false: the first most objects only
}

// MeasureCompression lists up to most block objects of raw (the store as
// the backend sees it) and sums their data and stored sizes. A block's
// data length is in its key (data.BlockKey), so the listing alone is
// enough: no object is read. Objects that are not blocks are skipped.
func MeasureCompression(ctx context.Context, raw object.Store, most int) (CompressionUsage, error) {
	var u CompressionUsage
	after, listed := "", 0
	for want := min(1000, most); want > 0; want = min(1000, most-listed) {
		page, err := raw.List(ctx, "chunks/", after, want)
		if err != nil {
			return u, fmt.Errorf("listing %s: %w", raw, err)
		}
		listed += len(page)
		for _, info := range page {
			if b, ok := data.ParseBlockKey(info.Key); ok {
				u.Objects++
				u.Data += int64(b.Size)
				u.Stored += info.Size
			}
		}
		if len(page) < want {
			u.Complete = true
			break
		}
		after = page[len(page)-1].Key
	}
	if u.Stored > 0 {
		u.Ratio = float64(u.Data) / float64(u.Stored)
	}
	return u, nil
}
