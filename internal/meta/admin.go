package meta

import (
	"context"
	"io"
)

// Optional engine interfaces for admin work (gc, fsck, dump/load, session
// reclaim). The mount never needs them; tools find them with a type
// assertion:
//
//	if sc, ok := engine.(meta.Scanner); ok { ... }
//
// They scan whole volumes, so they are slow on big ones and are meant for
// background work and offline tools, not the request path.

// Orphan is an inode whose last link is gone but whose data is kept until
// Purge, because a handle may still be open.
type Orphan struct {
	Ino   Ino
	Since int64 // when the last link went, ns since the epoch
}

// Scanner lists what background cleaners need.
type Scanner interface {
	// Orphans returns up to limit orphans (limit <= 0: all), in no
	// particular order. A caller that knows no client still has one open
	// (its session is gone) calls Purge on it.
	Orphans(ctx context.Context, limit int) ([]Orphan, error)
	// ScanSlices calls fn for every slice record of every chunk of every
	// inode, holes excluded, stopping at fn's first error, which it
	// returns. It sees a consistent state per inode, not per volume: a gc
	// must treat objects newer than the scan's start as live.
	ScanSlices(ctx context.Context, fn func(ino Ino, index uint32, s Slice) error) error
}

// CheckReport is what Checker.Check found.
type CheckReport struct {
	Inodes  uint64 `json:"inodes"`
	Dirs    uint64 `json:"dirs"`
	Files   uint64 `json:"files"`
	Entries uint64 `json:"entries"`
	Slices  uint64 `json:"slices"`
	// Problems lists each inconsistency found, one line each.
	Problems []string `json:"problems"`
	// Repaired counts the problems fixed (with repair set).
	Repaired int `json:"repaired"`
}

// Checker verifies a volume's metadata invariants: entries point to live
// inodes of the right type, link counts match entries, directory parents
// match, orphans are marked, slice reference counts match the chunk
// records, and usage counters match a recount.
type Checker interface {
	// Check reads the whole volume and reports problems. With repair it
	// also fixes what it can (link counts, parents, reference counts,
	// orphan marks, counters, dangling entries); repair is meant for a
	// volume no client has mounted.
	Check(ctx context.Context, repair bool) (CheckReport, error)
}

// Dumper writes a volume's whole metadata as a portable stream and reads it
// back, possibly into another engine kind (SQLite to PostgreSQL, say).
type Dumper interface {
	// Dump writes the metadata to w. Each part is read in a consistent
	// snapshot; for a consistent whole, dump a volume nobody writes to.
	Dump(ctx context.Context, w io.Writer) error
	// Restore loads a dump into an empty engine: ErrFormatted if it
	// already holds a volume. Sessions, their indexes and lock records
	// are not restored (the restored volume has no clients); orphans are,
	// for the caller to purge.
	Restore(ctx context.Context, r io.Reader) error
}

// TreeDump is what TreeDumper.DumpTree wrote.
type TreeDump struct {
	Inodes int64 // inodes written, the new root included
	Bytes  int64 // the files' lengths
	// Slices maps each slice the dump's chunk records name to its size:
	// with the block size, the block objects the dump needs.
	Slices map[SliceID]uint32
}

// TreeDumper writes one tree of a volume as the dump of a volume of its
// own, in the stream Dumper.Restore reads (backups of snapshots).
type TreeDumper interface {
	// DumpTree writes the tree at directory top, which must not change
	// while it runs (a snapshot's), with top as the root: the volume's
	// settings, its inodes (snapshot marks cleared), entries, symlinks,
	// xattrs, chunk records, the reference counts of its slices counted
	// within the tree, and counters recounted for it. Sessions, locks,
	// quotas, orphans, freed slices and snapshot records are left out.
	// ENOTDIR if top is not a directory.
	DumpTree(ctx context.Context, top Ino, w io.Writer) (TreeDump, error)
}

// LiveDump asks LiveTreeDumper.DumpLive for a tree.
type LiveDump struct {
	// Path is the tree, volume-relative ("" or "/" for the volume,
	// leaving /.snapshots and /.trash out).
	Path string
	// Begin is called with nothing written yet, before each attempt,
	// and returns where that attempt writes: an attempt that runs again
	// is discarded, and only the last writer holds the dump.
	Begin func() (io.Writer, error)
	// Slice, when set, is called with each slice the chunk records name
	// and its size as they are read, so that their blocks can be copied
	// while the tree is read: some more than once, and also for
	// attempts later discarded. It must not block for long (on Redis,
	// writers wait while the tree is read).
	Slice func(id SliceID, size uint32)
}

// LiveTreeDumper writes a tree of a volume that mounts are changing, as
// it is at one instant, without taking a snapshot (backups).
type LiveTreeDumper interface {
	// DumpLive writes the tree as DumpTree writes a snapshot's, read in
	// one consistent state of the volume. Nothing holds the slices the
	// dump names: they may be freed, and their blocks deleted, as soon
	// as they are read, so a caller that copies the blocks must check
	// that each is still there. ENOTDIR if the path is not a directory,
	// EINVAL inside /.snapshots.
	DumpLive(ctx context.Context, req LiveDump) (TreeDump, error)
}

// Quota is a directory quota: limits on the space and inodes of the tree
// under directory Ino (the directory itself not counted), and what the
// tree uses. A limit of 0 is no limit.
type Quota struct {
	Ino        Ino
	MaxSpace   uint64
	MaxInodes  uint64
	UsedSpace  uint64
	UsedInodes uint64
}

// Quotas sets and reads directory quotas. Operations that would take a
// tree past a limit fail with EDQUOT; moving an entry, or linking a file,
// between trees under different quotas fails with EXDEV (mv falls back to
// copy and delete). Engines document how soon other clients enforce a
// new quota and what a quota on a busy tree counts.
type Quotas interface {
	// SetQuota sets (or replaces) the limits of directory ino and counts
	// the tree's usage by walking it: cost proportional to the tree.
	// ENOTDIR for another type, ENOENT if absent.
	SetQuota(ctx context.Context, ino Ino, maxSpace, maxInodes uint64) (Quota, error)
	// GetQuota returns ino's quota: ENODATA if it has none.
	GetQuota(ctx context.Context, ino Ino) (Quota, error)
	// ListQuotas returns every quota, by inode number.
	ListQuotas(ctx context.Context) ([]Quota, error)
	// DeleteQuota removes ino's quota: ENODATA if it has none.
	DeleteQuota(ctx context.Context, ino Ino) error
	// StatfsAt is Statfs as seen from ino: inside a tree with a quota,
	// the nearest such quota's limits (the volume's where it sets none)
	// and usage; elsewhere the volume's.
	StatfsAt(ctx context.Context, ino Ino) (Statfs, error)
}

// CopyCounter counts the operations that gave an existing slice a new
// holder (copy_file_range, clones, snapshots, restores). A collector that
// sees the count unchanged across its scans knows no reference moved
// between inodes behind its back (internal/gc).
type CopyCounter interface {
	Copies(ctx context.Context) (uint64, error)
}

// CloneRequest asks for a copy of the file or tree Src as Name in
// directory Parent.
type CloneRequest struct {
	Src    Ino
	Parent Ino
	Name   string
	// Preserve keeps owners and times, as cp -a does; honoured for root
	// only (others own their copies, as with cp).
	Preserve bool
}

// Cloner makes writable copies that share data: metadata is copied, blocks
// are shared and copied on write. A directory is copied whole, as it was
// at one instant.
type Cloner interface {
	// Clone copies req.Src. EEXIST if the name is taken, EINVAL for a
	// tree into itself, EACCES where the caller may not read the source
	// or write the destination.
	Clone(ctx context.Context, req CloneRequest) (Entry, error)
}

// Snapshot describes a read-only, point-in-time copy of a volume or one of
// its trees, shown under /.snapshots/NAME.
type Snapshot struct {
	Name string `json:"name"`
	// Path is the tree it copies ("/" for the whole volume).
	Path string `json:"path"`
	// Ino is the snapshot's top directory (or file), /.snapshots/NAME.
	Ino     Ino   `json:"ino"`
	Created int64 `json:"created"` // ns since the epoch
	Inodes  int64 `json:"inodes"`
	// Bytes is the size of the files it holds (shared with the volume
	// and with other snapshots; not counted in the volume's usage).
	Bytes int64 `json:"bytes"`
}

// Snapshots creates, lists, deletes and restores snapshots.
type Snapshots interface {
	// CreateSnapshot copies the tree at path (volume-relative; "" or
	// "/" for the whole volume) to /.snapshots/name, as it is at one
	// instant, in time proportional to its inode count. EEXIST if the
	// name is taken.
	CreateSnapshot(ctx context.Context, name, path string) (Snapshot, error)
	// ListSnapshots returns every snapshot, oldest first.
	ListSnapshots(ctx context.Context) ([]Snapshot, error)
	// DeleteSnapshot deletes a snapshot's tree and record; its blocks
	// are freed once nothing else references them. ENOENT if absent.
	DeleteSnapshot(ctx context.Context, name string) error
	// RestoreSnapshot puts a writable copy of the snapshot's tree at sub
	// (relative to the snapshot; "" for all of it) back at its original
	// place in the volume. Whatever is there is first renamed aside;
	// the name it got is returned ("" if there was nothing).
	RestoreSnapshot(ctx context.Context, name, sub string) (aside string, err error)
}
