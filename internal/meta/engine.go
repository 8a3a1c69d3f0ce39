package meta

import "context"

// Engine is the metadata store as the vfs uses it. Every method is one
// file-system operation, atomic across all clients of the volume, and safe to
// call concurrently. Expected outcomes are bare syscall.Errno values as
// documented per method; ENOENT for a missing inode or name applies to all
// methods that take one. Permission checks use the context's Cred (see
// WithCred) unless Cred.Trusted is set.
//
// Engines that support admin work implement the optional interfaces in
// admin.go as well; callers find them with a type assertion.
type Engine interface {
	// Format writes the volume settings and creates the root directory.
	// It returns ErrFormatted if the volume exists, unless force is set, in
	// which case only the settings are replaced.
	Format(ctx context.Context, f Format, force bool) error
	// Load reads the volume settings: ErrNotFormatted if there are none,
	// ErrNewerFormat if a newer binary wrote them.
	Load(ctx context.Context) (Format, error)
	// Close releases the engine's connections, after flushing counters.
	Close() error

	// Lookup finds name in the directory parent. "." and ".." are handled
	// by the caller. ENOTDIR if parent is not a directory.
	Lookup(ctx context.Context, parent Ino, name string) (Entry, error)
	// Getattr returns an inode's attributes.
	Getattr(ctx context.Context, ino Ino) (Attr, error)
	// Setattr changes mode, owner and times as req.Valid says (not the
	// size: see Truncate). EPERM when the caller may not.
	Setattr(ctx context.Context, ino Ino, req SetattrRequest) (Attr, error)
	// Access checks that the caller may access ino with mask (R_OK,
	// W_OK, X_OK bits): nil or EACCES.
	Access(ctx context.Context, ino Ino, mask uint32) error

	// Mknod creates a file, directory, symlink, FIFO, socket or device
	// node. EEXIST if the name is taken, ENAMETOOLONG, EACCES. A parent
	// with a default ACL passes it down (see acl.go): the new inode's
	// access ACL, and for a directory its default ACL too.
	Mknod(ctx context.Context, req MknodRequest) (Entry, error)
	// Link adds a hard link to ino as parent/name. EPERM for directories.
	Link(ctx context.Context, ino Ino, parent Ino, name string) (Entry, error)
	// Unlink removes a non-directory entry. EISDIR for a directory.
	// When the inode's last link goes while it may be open (in this
	// client or, with an OpenTracker, in any session), it becomes an
	// orphan and Removed.Orphan is set: the caller calls Purge once it
	// needs the inode no longer.
	Unlink(ctx context.Context, parent Ino, name string) (Removed, error)
	// Rmdir removes an empty directory: ENOTEMPTY, ENOTDIR.
	Rmdir(ctx context.Context, parent Ino, name string) error
	// Rename moves an entry, replacing an existing target as rename(2)
	// allows, with RENAME_NOREPLACE and RENAME_EXCHANGE. A replaced file
	// whose last link goes is reported in Removed as for Unlink.
	Rename(ctx context.Context, req RenameRequest) (Removed, error)
	// Readdir returns up to limit entries of directory ino whose names sort
	// after the name after ("" = from the start), in byte order of names,
	// without "." and "..". With plus, each entry carries its Attr.
	Readdir(ctx context.Context, ino Ino, after string, limit int, plus bool) ([]DirEntry, error)
	// Readlink returns a symlink's target: EINVAL if ino is not one.
	Readlink(ctx context.Context, ino Ino) (string, error)

	// Truncate sets a regular file's length, dropping or hiding data
	// beyond it; the part of the file it extends reads as zeros.
	// EISDIR/EINVAL for other types. mtime and ctime are updated.
	Truncate(ctx context.Context, ino Ino, length uint64) (Attr, error)
	// Fallocate allocates (mode 0 or FALLOC_FL_KEEP_SIZE), punches a hole
	// (FALLOC_FL_PUNCH_HOLE|FALLOC_FL_KEEP_SIZE) or zeroes a range
	// (FALLOC_FL_ZERO_RANGE). Other modes: EOPNOTSUPP.
	Fallocate(ctx context.Context, ino Ino, mode uint32, off, length uint64) (Attr, error)
	// ReadChunk returns the slice list of chunk index of ino, oldest first.
	// A chunk never written returns an empty list.
	ReadChunk(ctx context.Context, ino Ino, index uint32) ([]Slice, error)
	// WriteChunk appends a slice whose blocks are already stored, extends
	// the length to cover it and sets mtime and ctime to now.
	WriteChunk(ctx context.Context, ino Ino, index uint32, s Slice) (CommitResult, error)
	// WriteSlices appends several slices of one file, in order, in one
	// transaction: WriteChunk for each, at the cost of one. Records of a
	// slice id that already holds a reference (Shared: an earlier record
	// of the same object was committed, as when one object packs several
	// small writes) take a reference of their own. SliceCount reports the
	// last record's chunk; Counts every chunk written. An engine that
	// implements CommitGater awaits the context's commit gate last,
	// before it commits (gate.go).
	WriteSlices(ctx context.Context, ino Ino, ws []SliceWrite) (CommitResult, error)
	// CopyFileRange clones bytes from one file to another (or the same)
	// by reference, without copying data. It returns the bytes copied,
	// which is short when the source ends first.
	CopyFileRange(ctx context.Context, req CopyRequest) (uint64, error)
	// CompactChunk replaces the slice list old of a chunk by replacement,
	// which must read the same. If the list no longer starts with old
	// (another write came in between), the slices that followed are kept
	// after replacement; if old is no longer a prefix, ErrConflict.
	CompactChunk(ctx context.Context, ino Ino, index uint32, old, replacement []Slice) error
	// NewSliceID returns a volume-unique slice id.
	NewSliceID(ctx context.Context) (SliceID, error)

	// Getxattr returns an extended attribute's value: ENODATA if unset.
	Getxattr(ctx context.Context, ino Ino, name string) ([]byte, error)
	// Setxattr sets an extended attribute. flags is XATTR_CREATE (EEXIST
	// if set), XATTR_REPLACE (ENODATA if unset) or 0, with
	// XattrACLKillSgid. E2BIG past MaxXattrValue. The ACL names are
	// parsed (EINVAL if malformed): the access ACL rewrites the mode and
	// is kept only while it says more than the mode; a default ACL is
	// EACCES on a non-directory; an empty ACL removes it.
	Setxattr(ctx context.Context, ino Ino, name string, value []byte, flags uint32) error
	// Listxattr returns the names of ino's extended attributes.
	Listxattr(ctx context.Context, ino Ino) ([]string, error)
	// Removexattr removes an extended attribute: ENODATA if unset.
	Removexattr(ctx context.Context, ino Ino, name string) error

	// Statfs returns the volume's usage.
	Statfs(ctx context.Context) (Statfs, error)

	// Purge deletes an orphan inode (no links left) with its data
	// references; the freed slices become visible to FreedSlices. It is a
	// no-op for an inode that still has links or does not exist, and,
	// with an OpenTracker, for one that a client still holds open (its
	// last release purges it then).
	Purge(ctx context.Context, ino Ino) error
	// FreedSlices returns up to limit (<= 0: all) slices whose last
	// reference is gone (ID and Size set), in ID order, with IDs above
	// after (0: from the first), fewer than limit only at the end of the
	// list: their objects may be deleted. A caller
	// reads a long list in pages, each call after the last ID of the
	// previous: one call is one engine transaction, and a big one holds a
	// single-threaded server (Redis) for its whole length.
	FreedSlices(ctx context.Context, after SliceID, limit int) ([]Slice, error)
	// ForgetFreed drops slices from the freed list once their objects are
	// deleted. Idempotent.
	ForgetFreed(ctx context.Context, ids []SliceID) error
}

// SetattrRequest says which attributes Setattr changes.
type SetattrRequest struct {
	Valid SetattrMask
	Mode  uint16 // permission bits (07777)
	Uid   uint32
	Gid   uint32
	Atime int64 // ns; ignored with SetAtimeNow
	Mtime int64 // ns; ignored with SetMtimeNow
}

// SetattrMask selects the fields a SetattrRequest changes.
type SetattrMask uint32

// Setattr fields.
const (
	SetMode SetattrMask = 1 << iota
	SetUid
	SetGid
	SetAtime
	SetMtime
	SetAtimeNow
	SetMtimeNow
	// SetKillSuidgid clears the set-id bits a write, truncate or change
	// of owner takes away (KillSuidgid), as the kernel asks of a mount
	// that handles them (FUSE_HANDLE_KILLPRIV_V2).
	SetKillSuidgid
)

// MknodRequest creates one inode.
type MknodRequest struct {
	Parent Ino
	Name   string
	Type   Type
	Mode   uint16 // permission bits; Cred.Umask or a default ACL of Parent apply
	Rdev   uint32
	Target string // symlink target
	// Exclusive returns EEXIST if the name exists. Without it, an
	// existing regular file is returned as is (open with O_CREAT).
	Exclusive bool
	// Open counts the regular file created (or returned) as opened by
	// this client, as OpenTracker.Open does, in the same transaction; the
	// caller then owes one OpenTracker.Release. Engines that are not an
	// OpenTracker ignore it.
	Open bool
	// Reserved, if set, is called with the number the new inode gets,
	// before anything is committed; the number is not handed out again
	// if the create fails. A caller that must tell after a crash whether
	// its create committed records it (a name that then bears it was made
	// by this request).
	Reserved func(Ino)
}

// Removed describes an inode that lost a link in Unlink or Rename.
type Removed struct {
	Ino  Ino
	Attr Attr
	// Orphan: the last link is gone but the inode is kept, because this
	// client or another session may hold it open; call Purge when this
	// client needs it no longer (another session's last release purges
	// it there).
	Orphan bool
}

// Rename flags, as renameat2(2).
const (
	RenameNoReplace uint32 = 1
	RenameExchange  uint32 = 2
	RenameWhiteout  uint32 = 4
)

// RenameRequest moves OldParent/OldName to NewParent/NewName.
type RenameRequest struct {
	OldParent Ino
	OldName   string
	NewParent Ino
	NewName   string
	Flags     uint32
	// Moving, if set, is called with the inode the old name holds before
	// anything is committed, when the rename is to move it (not when both
	// names hold the same inode); again if the engine runs the rename
	// again: the last call names the inode it moves. A caller that must
	// tell after a crash whether its rename committed records it: the new
	// name then holds it.
	Moving func(Ino)
}

// CommitResult is what WriteChunk and WriteSlices report.
type CommitResult struct {
	Attr       Attr
	SliceCount int            // slices in the (last) chunk after the commit
	Counts     map[uint32]int // WriteSlices: slices per chunk written
}

// SliceWrite is one record for WriteSlices: slice S appended to chunk
// Index. Shared is false for the first record of a fresh slice id, which
// holds the slice's implicit first reference, and true for every later
// record of the same id.
type SliceWrite struct {
	Index  uint32
	S      Slice
	Shared bool
}

// CopyRequest clones Len bytes from SrcIno at SrcOff to DstIno at DstOff.
type CopyRequest struct {
	SrcIno Ino
	SrcOff uint64
	DstIno Ino
	DstOff uint64
	Len    uint64
}

// OpenTracker is implemented by engines that know which clients hold which
// files open, so that a file open anywhere outlives the unlink (or rename
// over) of its last name until its last release in any session, as on one
// local disk. The engine records opens per session (meta.Sessions): the
// end or reclaim of a session lets go of everything it held open. It also
// deletes an unlinked inode in the same transaction as its last unlink
// when no client holds it open, instead of leaving an orphan for a later
// Purge: one transaction per unlink instead of two.
type OpenTracker interface {
	// SetOpenCheck registers isOpen, which reports whether this client
	// holds ino open. It is called inside engine transactions and must
	// not call the engine. nil restores the default (every unlinked
	// regular file becomes an orphan).
	SetOpenCheck(isOpen func(Ino) bool)
	// Open checks that the caller may open ino for mask (MayRead,
	// MayWrite bits: EACCES; EISDIR for a directory and MayWrite),
	// returns its attributes and counts one open of ino by this client;
	// the first open of a regular file is recorded under this client's
	// session in the same transaction. Every successful Open (and Mknod
	// with Open) is matched by one Release.
	Open(ctx context.Context, ino Ino, mask uint32) (Attr, error)
	// Release counts one open of ino less. The last one lets go of the
	// record; the engine may defer that (and the purge of an orphan that
	// no other session holds open) to a background flush, so Release
	// itself need not touch the store. A deferred drop only delays a
	// purge: the end of the session drops what is left.
	Release(ctx context.Context, ino Ino) error
}

// OpenAdopter is implemented by OpenTrackers that keep the record of a
// released inode a while (a reopen then writes nothing): records that a
// process left when it died or handed over. A server that took over a
// resumed session calls Adopted once it has opened again every handle it
// adopted; the engine then drops, in the background, the session's
// records of inodes this client does not hold, which nothing else would
// drop before the session ends.
type OpenAdopter interface {
	Adopted(ctx context.Context) error
}

// Syncer is implemented by engines that can make every committed operation
// durable against power loss on demand; the vfs calls it on fsync(2).
// Engines whose commits are durable as they happen need not implement it.
type Syncer interface {
	Sync(ctx context.Context) error
}
