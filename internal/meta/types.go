package meta

import (
	"fmt"
	"syscall"
	"time"
)

// Ino is an inode number. RootIno is the root directory; 0 is never used.
type Ino uint64

// RootIno is the inode number of the volume's root directory. It equals the
// FUSE root node id so that the fusefs adaptor can use inode numbers as node
// ids unchanged.
const RootIno Ino = 1

// SliceID names a slice of file data. 0 is a hole: it reads as zeros and has
// no objects.
type SliceID uint64

// ChunkSize is the span of file offsets one chunk covers.
const ChunkSize = 64 << 20

// MaxNameLen is the longest directory entry name, as on Linux.
const MaxNameLen = 255

// MaxSymlinkLen is the longest symlink target.
const MaxSymlinkLen = 4096

// MaxXattrValue is the largest xattr value an engine accepts.
const MaxXattrValue = 64 << 10

// Type is an inode's file type.
type Type uint8

// File types.
const (
	TypeFile Type = iota + 1
	TypeDir
	TypeSymlink
	TypeFIFO
	TypeBlockDev
	TypeCharDev
	TypeSocket
)

// TypeFromMode returns the Type for the S_IFMT bits of a mode.
func TypeFromMode(mode uint32) Type {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return TypeDir
	case syscall.S_IFLNK:
		return TypeSymlink
	case syscall.S_IFIFO:
		return TypeFIFO
	case syscall.S_IFBLK:
		return TypeBlockDev
	case syscall.S_IFCHR:
		return TypeCharDev
	case syscall.S_IFSOCK:
		return TypeSocket
	default:
		return TypeFile
	}
}

// ModeBits returns the S_IFMT bits for t.
func (t Type) ModeBits() uint32 {
	switch t {
	case TypeDir:
		return syscall.S_IFDIR
	case TypeSymlink:
		return syscall.S_IFLNK
	case TypeFIFO:
		return syscall.S_IFIFO
	case TypeBlockDev:
		return syscall.S_IFBLK
	case TypeCharDev:
		return syscall.S_IFCHR
	case TypeSocket:
		return syscall.S_IFSOCK
	default:
		return syscall.S_IFREG
	}
}

// DirentType returns the DT_* value for t, as readdir reports it.
func (t Type) DirentType() uint32 { return t.ModeBits() >> 12 }

// Attr is an inode's attributes. Times are nanoseconds since the Unix epoch.
type Attr struct {
	Type   Type
	Mode   uint16 // permission bits with setuid, setgid and sticky (07777)
	Uid    uint32
	Gid    uint32
	Atime  int64
	Mtime  int64
	Ctime  int64
	Nlink  uint32
	Length uint64 // file size; for a symlink, the target length
	Rdev   uint32
	// Parent is a directory's parent. For other types engines may record
	// the directory the inode was created in or last renamed into (kvmeta
	// does, for directory quotas), or 0; with hard links it names one of
	// the directories only.
	Parent Ino
	// Alloc is the number of bytes of a regular file that hold data (not
	// holes): what st_blocks reports. Engines that cannot tell, and
	// records written before it was kept, give the length.
	Alloc uint64
}

// FullMode returns the attribute's mode with its S_IFMT bits.
func (a Attr) FullMode() uint32 { return a.Type.ModeBits() | uint32(a.Mode) }

// Entry is an inode number with its attributes, as lookup and create return.
type Entry struct {
	Ino  Ino
	Attr Attr
}

// DirEntry is one directory entry as Readdir returns it.
type DirEntry struct {
	Name string
	Ino  Ino
	Type Type
	Attr *Attr // set only when Readdir was asked for attributes
}

// Slice is one write's data placed in a chunk: Len bytes at chunk position
// Pos, taken from offset Off of the slice's stored data, which is Size bytes
// long in all. Later slices in a chunk's list shadow earlier ones where they
// overlap. A slice with ID 0 is a hole (reads as zeros).
type Slice struct {
	ID   SliceID
	Size uint32
	Off  uint32
	Len  uint32
	Pos  uint32
}

// String formats s for logs.
func (s Slice) String() string {
	return fmt.Sprintf("slice{id=%d size=%d off=%d len=%d pos=%d}", s.ID, s.Size, s.Off, s.Len, s.Pos)
}

// Format holds a volume's settings, written once by format.
type Format struct {
	Name      string    `json:"name"`
	UUID      string    `json:"uuid"`
	Version   int       `json:"version"`            // format version; see CurrentFormatVersion
	Storage   string    `json:"storage"`            // object store kind: "file", "s3", "mem"
	Bucket    string    `json:"bucket"`             // store location: a directory or a URL
	BlockSize int       `json:"block_size"`         // bytes per block object, at most 4 MiB
	Capacity  uint64    `json:"capacity,omitempty"` // bytes; 0 = unlimited
	Inodes    uint64    `json:"inodes,omitempty"`   // 0 = unlimited
	Created   time.Time `json:"created"`
	// Compression is how blocks are stored: "" (none, plain blocks) or
	// "zstd"/"lz4" (every block a compression frame, docs/format.md).
	// Volumes with compression are format version 3.
	Compression string `json:"compression,omitempty"`
	// TrashDays keeps deleted files in /.trash for this many days
	// (docs/admin.md, "Trash"); 0, the default, deletes them at once.
	// It is a setting, not a layout change: settings written before it
	// existed decode as 0, and the format version does not change.
	TrashDays int `json:"trash_days,omitempty"`

	// Encryption is set on a volume whose objects are encrypted at rest
	// (docs/admin.md); nil on a plain volume.
	Encryption *Encryption `json:"encryption,omitempty"`
}

// Encryption holds how an encrypted volume's data key is derived and kept.
// It never holds a key in clear: the data key is stored wrapped (sealed)
// under a key-encryption key derived from the passphrase or key file, so
// changing the passphrase rewraps the data key without touching any object.
type Encryption struct {
	Cipher string `json:"cipher"` // object cipher: "xchacha20-poly1305"
	KDF    string `json:"kdf"`    // key derivation: "argon2id"
	Salt   []byte `json:"salt"`   // KDF salt, random per wrapping
	Time   uint32 `json:"time"`   // argon2id passes
	Memory uint32 `json:"memory"` // argon2id memory in KiB
	Lanes  uint8  `json:"lanes"`  // argon2id parallelism
	// WrappedKey is nonce || XChaCha20-Poly1305 seal of the data key
	// under the derived key; opening it is also the wrong-key check.
	WrappedKey []byte `json:"wrapped_key"`
}

// CurrentFormatVersion is the newest volume format this binary reads and
// writes. Engines refuse volumes with a higher version. Version 2 added
// appended chunk keys (docs/format.md); version 1 volumes are read and
// written in the version 1 layout. Version 3 added block compression
// (Format.Compression) and encryption (Format.Encryption): a volume is
// version 3 only when it compresses or encrypts, so that older binaries,
// which would read frames or sealed objects as data (and write plain
// ones), refuse it, while a volume with neither stays version 2.
const CurrentFormatVersion = 3

// PlainFormatVersion is the version of a new volume without compression
// or encryption.
const PlainFormatVersion = 2

// MaxBlockSize is the largest block object size.
const MaxBlockSize = 4 << 20

// Statfs is a volume's usage.
type Statfs struct {
	TotalSpace  uint64 `json:"total_space"`
	UsedSpace   uint64 `json:"used_space"`
	TotalInodes uint64 `json:"total_inodes"`
	UsedInodes  uint64 `json:"used_inodes"`
}

// Now returns the current time in nanoseconds, as engines store times.
func Now() int64 { return time.Now().UnixNano() }
