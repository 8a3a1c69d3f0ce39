package data

import (
	"strconv"
	"strings"

	"shoal/internal/meta"
)

// BlockPrefix is where block objects live (BlockKey).
const BlockPrefix = "chunks/"

// BlockKey names block index (of size bytes) of slice id:
// "chunks/<id/1e6>/<id/1e3>/<id>_<index>_<size>". The two directory levels
// keep listings of any one prefix small; the size in the name lets the
// deleter enumerate a slice's keys from (id, size) alone and lets a reader
// detect a short or oversized object without a Head.
func BlockKey(id meta.SliceID, index int, size int) string {
	// By hand rather than fmt.Sprintf: every block read names its key.
	b := make([]byte, 0, 64)
	b = append(b, BlockPrefix...)
	b = strconv.AppendUint(b, uint64(id/1_000_000), 10)
	b = append(b, '/')
	b = strconv.AppendUint(b, uint64(id/1_000), 10)
	b = append(b, '/')
	b = strconv.AppendUint(b, uint64(id), 10)
	b = append(b, '_')
	b = strconv.AppendInt(b, int64(index), 10)
	b = append(b, '_')
	b = strconv.AppendInt(b, int64(size), 10)
	return string(b)
}

// BlockRef is what a block key names.
type BlockRef struct {
	ID    meta.SliceID
	Index int
	Size  int
}

// ParseBlockKey parses a key made by BlockKey. ok is false for any other
// key, including one whose directory levels do not match its id or whose
// numbers are not written canonically (leading zeros).
func ParseBlockKey(key string) (BlockRef, bool) {
	rest, ok := strings.CutPrefix(key, BlockPrefix)
	if !ok {
		return BlockRef{}, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 {
		return BlockRef{}, false
	}
	fields := strings.Split(parts[2], "_")
	if len(fields) != 3 {
		return BlockRef{}, false
	}
	id, err1 := strconv.ParseUint(fields[0], 10, 64)
	index, err2 := strconv.Atoi(fields[1])
	size, err3 := strconv.Atoi(fields[2])
	if err1 != nil || err2 != nil || err3 != nil || id == 0 || index < 0 || size <= 0 {
		return BlockRef{}, false
	}
	b := BlockRef{ID: meta.SliceID(id), Index: index, Size: size}
	if BlockKey(b.ID, b.Index, b.Size) != key {
		return BlockRef{}, false // non-canonical: leading zeros, wrong levels
	}
	return b, true
}
