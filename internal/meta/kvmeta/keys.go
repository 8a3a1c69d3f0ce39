package kvmeta

import (
	"encoding/binary"
	"fmt"

	"shoal/internal/meta"
)

// Key kinds: the first byte of every key. docs/format.md is the reference;
// changing any of these or the encodings below is a format change.
const (
	kindAttr    = 'A' // A ino → attr record
	kindDentry  = 'D' // D parent name → ino, type
	kindChunk   = 'C' // C ino index(4) [seq(4)] → slice records
	kindSymlink = 'S' // S ino → target
	kindXattr   = 'X' // X ino name → value
	kindRefs    = 'K' // K slice → reference count when > 1
	kindFreed   = 'L' // L slice → size: slice awaiting object deletion
	kindOrphan  = 'O' // O ino → unlink time: nlink 0, data kept
	kindFormat  = 'F' // F → format JSON
	kindCounter = 'N' // N name → int64 counter
	kindQuota   = 'U' // U ino → directory quota: limits and usage
	kindSnap    = 'Y' // Y name → snapshot record JSON

	kindSession       = 'E' // E session → session JSON
	kindSessionOrphan = 'o' // o session ino → "": orphans a session made
	kindSessionLock   = 'q' // q session ino → "": inodes a session locks
	kindOpen          = 'H' // H ino session → "": ino is open in session
	kindFlock         = 'Q' // Q ino → flock records
	kindPlock         = 'P' // P ino → fcntl lock records
)

// Counter names under kindCounter.
const (
	counterNextInode   = "nextInode"
	counterNextSlice   = "nextSlice"
	counterUsedSpace   = "usedSpace"
	counterUsedInodes  = "usedInodes"
	counterNextSession = "nextSession"
	counterCopies      = "copies" // see meta.CopyCounter
)

var be = binary.BigEndian

func inoKey(kind byte, ino meta.Ino) []byte {
	k := make([]byte, 9)
	k[0] = kind
	be.PutUint64(k[1:], uint64(ino))
	return k
}

func attrKey(ino meta.Ino) []byte    { return inoKey(kindAttr, ino) }
func symlinkKey(ino meta.Ino) []byte { return inoKey(kindSymlink, ino) }
func orphanKey(ino meta.Ino) []byte  { return inoKey(kindOrphan, ino) }
func formatKey() []byte              { return []byte{kindFormat} }

func dentryKey(parent meta.Ino, name string) []byte {
	return append(inoKey(kindDentry, parent), name...)
}

func xattrKey(ino meta.Ino, name string) []byte {
	return append(inoKey(kindXattr, ino), name...)
}

func chunkKey(ino meta.Ino, index uint32) []byte {
	return be.AppendUint32(inoKey(kindChunk, ino), index)
}

// chunkKeyLen is the length of a chunk's base key; an appended key (see
// chunk.go) adds a 4-byte sequence number.
const chunkKeyLen = 13

// appendedKey is the key of a chunk's appended records number seq.
func appendedKey(ino meta.Ino, index, seq uint32) []byte {
	return be.AppendUint32(chunkKey(ino, index), seq)
}

// chunkIndex returns the index of a chunk key (base or appended).
func chunkIndex(key []byte) uint32 { return be.Uint32(key[9:]) }

// chunkKeyOrder is a chunk key's place in its chunk's list: 0 for the
// base key, seq+1 for an appended one; -1 for a malformed key.
func chunkKeyOrder(key []byte) int64 {
	switch len(key) {
	case chunkKeyLen:
		return 0
	case chunkKeyLen + 4:
		return int64(be.Uint32(key[chunkKeyLen:])) + 1
	}
	return -1
}

func sliceKey(kind byte, id meta.SliceID) []byte {
	return inoKey(kind, meta.Ino(id))
}

func counterKey(name string) []byte { return append([]byte{kindCounter}, name...) }

// attrVersion is the first byte of an attr record.
const attrVersion = 1

// attrLen is the encoded size of an attr record up to its flags byte.
// Records written since allocated bytes are kept (meta.Attr.Alloc) carry
// them in 8 more bytes; older records end at the flags, and decode as
// fully allocated (Alloc = Length).
const attrLen = 1 + 1 + 2 + 4 + 4 + 8 + 8 + 8 + 4 + 8 + 4 + 8 + 1

// Attr record flags (byte attrLen-1): facts about an inode that save reads.
const (
	// flagXattrs: the inode has (or had) extended attributes, so deleting
	// it must scan for them. Set by Setxattr, never cleared.
	flagXattrs byte = 1 << iota
	// flagOpened: a session recorded the inode open in a transaction
	// that did not create it (open.go), so the last unlink must look for
	// open records; without it only the creator's record can exist, and
	// the creator may know its fate. Set on record, never cleared.
	flagOpened
	// flagFrozen: the inode belongs to a snapshot (or is /.snapshots):
	// nothing may change it or its entries (EROFS), except the snapshot
	// commands themselves (frozen.go). Set when the snapshot is taken.
	flagFrozen
	// flagTrash: the directory is the trash (/.trash) or one of its hour
	// directories (trash.go): nothing may be created in it, and an
	// unlink in it deletes for good. Set when the trash makes it.
	flagTrash
)

// encodeAttr encodes a with no flags and generation 0; see encodeRecord.
func encodeAttr(a *meta.Attr) []byte { return encodeAttrRecord(a, 0, 0) }

// encodeAttrRecord encodes a with its flags byte and, on version 2
// volumes, its chunk generation (see chunkcache.go; gen 0 is not written,
// so version 1 volumes keep their record length).
func encodeAttrRecord(a *meta.Attr, flags byte, gen uint64) []byte {
	b := make([]byte, 0, attrLen+16)
	b = append(b, attrVersion, byte(a.Type))
	b = be.AppendUint16(b, a.Mode)
	b = be.AppendUint32(b, a.Uid)
	b = be.AppendUint32(b, a.Gid)
	b = be.AppendUint64(b, uint64(a.Atime))
	b = be.AppendUint64(b, uint64(a.Mtime))
	b = be.AppendUint64(b, uint64(a.Ctime))
	b = be.AppendUint32(b, a.Nlink)
	b = be.AppendUint64(b, a.Length)
	b = be.AppendUint32(b, a.Rdev)
	b = be.AppendUint64(b, uint64(a.Parent))
	b = append(b, flags)
	b = be.AppendUint64(b, a.Alloc) // appended: older records end at the flags
	if gen != 0 {
		b = be.AppendUint64(b, gen) // appended: older records end at Alloc
	}
	return b
}

// attrGen returns the chunk generation of an encoded attr record (0 for
// records without one).
func attrGen(b []byte) uint64 {
	if len(b) < attrLen+16 {
		return 0
	}
	return be.Uint64(b[attrLen+8:])
}

// attrFlags returns the flags byte of an encoded attr record.
func attrFlags(b []byte) byte {
	if len(b) < attrLen {
		return 0
	}
	return b[attrLen-1]
}

// decodeAttr decodes an attr record of any length encodeAttrRecord
// writes or wrote (attrLen, +8 with Alloc, +16 with a generation); any
// other length, version or file type is a corrupt record.
func decodeAttr(b []byte) (meta.Attr, error) {
	if n := len(b); n != attrLen && n != attrLen+8 && n != attrLen+16 || b[0] != attrVersion || !validType(b[1]) {
		return meta.Attr{}, fmt.Errorf("bad attr record (%d bytes, version %d)", len(b), firstByte(b))
	}
	a := meta.Attr{
		Type:   meta.Type(b[1]),
		Mode:   be.Uint16(b[2:]),
		Uid:    be.Uint32(b[4:]),
		Gid:    be.Uint32(b[8:]),
		Atime:  int64(be.Uint64(b[12:])),
		Mtime:  int64(be.Uint64(b[20:])),
		Ctime:  int64(be.Uint64(b[28:])),
		Nlink:  be.Uint32(b[36:]),
		Length: be.Uint64(b[40:]),
		Rdev:   be.Uint32(b[48:]),
		Parent: meta.Ino(be.Uint64(b[52:])),
	}
	a.Alloc = a.Length // a record from before Alloc was kept: assume all data
	if len(b) >= attrLen+8 {
		a.Alloc = be.Uint64(b[attrLen:])
	}
	return a, nil
}

func firstByte(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	return int(b[0])
}

// dentryLen is the encoded size of a directory entry value.
const dentryLen = 9

func encodeDentry(ino meta.Ino, t meta.Type) []byte {
	b := make([]byte, 0, dentryLen)
	b = be.AppendUint64(b, uint64(ino))
	return append(b, byte(t))
}

// validType reports whether t is a file type records may hold.
func validType(t byte) bool { return t >= byte(meta.TypeFile) && t <= byte(meta.TypeSocket) }

func decodeDentry(b []byte) (meta.Ino, meta.Type, error) {
	if len(b) != dentryLen || !validType(b[8]) {
		return 0, 0, fmt.Errorf("bad dentry record (%d bytes)", len(b))
	}
	return meta.Ino(be.Uint64(b)), meta.Type(b[8]), nil
}

// sliceLen is the size of one slice record in a chunk value; a chunk value
// is a concatenation of records, oldest first, so a write appends.
const sliceLen = 8 + 4*4

func appendSlice(b []byte, s meta.Slice) []byte {
	b = be.AppendUint64(b, uint64(s.ID))
	b = be.AppendUint32(b, s.Size)
	b = be.AppendUint32(b, s.Off)
	b = be.AppendUint32(b, s.Len)
	return be.AppendUint32(b, s.Pos)
}

func encodeSlices(ss []meta.Slice) []byte {
	b := make([]byte, 0, len(ss)*sliceLen)
	for _, s := range ss {
		b = appendSlice(b, s)
	}
	return b
}

func decodeSlices(b []byte) ([]meta.Slice, error) {
	if len(b)%sliceLen != 0 {
		return nil, fmt.Errorf("bad chunk record (%d bytes)", len(b))
	}
	ss := make([]meta.Slice, 0, len(b)/sliceLen)
	for ; len(b) > 0; b = b[sliceLen:] {
		s := meta.Slice{
			ID:   meta.SliceID(be.Uint64(b)),
			Size: be.Uint32(b[8:]),
			Off:  be.Uint32(b[12:]),
			Len:  be.Uint32(b[16:]),
			Pos:  be.Uint32(b[20:]),
		}
		if !validSlice(s) {
			return nil, fmt.Errorf("bad slice record %v in chunk record", s)
		}
		ss = append(ss, s)
	}
	return ss, nil
}

// validSlice reports whether a slice record can have been written: its
// range lies inside the chunk and (unless it is a hole, id 0) inside the
// slice's data. A record that fails would send a read to bytes no block
// holds.
func validSlice(s meta.Slice) bool {
	if uint64(s.Pos)+uint64(s.Len) > meta.ChunkSize {
		return false
	}
	if s.ID == 0 {
		return s.Size == 0 && s.Off == 0
	}
	return uint64(s.Off)+uint64(s.Len) <= uint64(s.Size)
}

func encodeInt(v int64) []byte { return be.AppendUint64(nil, uint64(v)) }

func decodeInt(b []byte) int64 {
	if len(b) < 8 {
		return 0
	}
	return int64(be.Uint64(b))
}
