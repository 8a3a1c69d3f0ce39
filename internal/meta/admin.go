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
