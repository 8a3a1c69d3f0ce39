// Package kvmeta is Shoal's metadata engine: meta.Engine implemented once,
// over the transactional ordered key-value seam of package kv. SQLite,
// PostgreSQL and Redis each provide only a kv.Store; every file-system rule
// lives here (and in meta/posix.go), so there is one rename, one unlink, one
// slice reference count for all of them.
//
// # Atomicity
//
// Each Engine method is exactly one kv transaction: Engine.update for
// operations that change anything, Engine.view (one consistent snapshot)
// for Lookup, Getattr, Access, Readdir, Readlink, ReadChunk, Getxattr,
// Listxattr, Statfs, FreedSlices and Load. Reads known in advance go to the
// store in one request where it can: Getattr's one key (kv.GetOne), and
// Lookup's, Access's, Readlink's and a recording-free Open's few keys, and
// ReadChunk's attributes when the chunk cache holds the list
// (Engine.viewAhead, kv.ViewAhead: one round trip on PostgreSQL); should
// such a view read anything else, it runs again as a plain view, and only
// that run counts. A store that keeps values on the client and learns of
// every change to them (kv.Cacher: Redis from its server's invalidations,
// SQLite from its WAL index's change counter) is asked to keep
// attributes and entries; Redis answers from them only reads whose
// context carries a meta.Cached (a mount's lookup and getattr), and says
// there how old the answer is; SQLite's answers are current, so it
// answers every point read (kv.GetOne, kv.ViewAhead) from them. Mknod of
// a directory tells the store that no entry of the new inode exists yet
// (kv.FreshPrefix); a trusted Lookup
// asks the store first whether the name is known absent (kv.KnownAbsent:
// Redis and SQLite know it for a directory this client made, as long as
// they saw every change since) and answers ENOENT without a transaction
// if so.
// Backends give serializable
// transactions and retry conflicts by running the function again, so an
// operation reads, checks the POSIX rules against what it read, and writes,
// with no other client's operation in between as far as any reader can tell.
// The per-attempt state (txn) caches the attributes read so an inode touched
// twice in one operation is written once, and carries usage deltas that are
// published only after the commit.
//
// Engine.update and Engine.view also count what they run (txnstats.go,
// meta.TxnStats): transactions, extra attempts, conflicts that never
// cleared, and their time, as a few atomic adds per transaction; and the
// store's count of reads answered from its client-side cache.
//
// The only work outside an operation's transaction is id allocation: inode
// numbers and slice ids are reserved in batches (64 and 256) by their own
// short transactions, so concurrent clients rarely meet on a counter.
// Used-space and inode counts are in-memory deltas flushed to their counters
// about once a second and on Close, never a hot key per create.
//
// # Key layout
//
// Integers are big-endian so keys sort numerically; docs/format.md is the
// reference and says how the layout is versioned.
//
//	'A' ino                → attr record (version byte + fixed fields)
//	'D' parent name        → child ino + type
//	'C' ino index(4)       → slice records, 24 bytes each, oldest first
//	'S' ino                → symlink target
//	'X' ino name           → xattr value
//	'K' slice              → reference count, only while above one
//	'L' slice              → size: freed slice awaiting object deletion
//	'O' ino                → orphan: nlink 0, data kept for open handles
//	'F'                    → format JSON (volume settings, version)
//	'N' name               → counters (next ids, usage, quota directories)
//	'U' ino                → directory quota: limits and the tree's usage
//	'Y' name               → snapshot record (snapshot.go)
//	'E' session            → session JSON (heartbeat)
//	'o'/'q' session ino    → what a session holds: orphans, locked inodes
//	'H' ino session        → ino is open in session (see open.go)
//	'Q' ino, 'P' ino       → flock and fcntl lock records of an inode
//
// Ordered, paged scans (readdir, listxattr, a file's chunks) all use a
// prefix of exactly kv.ScanPrefixLen bytes: the kind plus the 8-byte inode.
//
// # Semantics worth knowing
//
//   - A directory's nlink is 2 plus its subdirectories; its Length is 4096.
//     A symlink's Length is its target's length. atime is set at creation
//     and by Setattr only (noatime).
//   - Entry changes set the parent's mtime and ctime; attribute, link and
//     xattr changes set the inode's ctime; data changes set mtime and ctime.
//   - A regular file whose last link goes while it is open anywhere (this
//     client's check, or an 'H' record of any session) becomes an orphan
//     ('O' key) and keeps its chunks until the last holder lets go: see
//     open.go. Other inodes are deleted at once.
//   - Permission checks follow meta/posix.go for path operations (lookup,
//     create, link, unlink, rmdir, rename, setattr, access, xattrs). Data
//     operations that act on an open file (WriteChunk, Truncate,
//     Fallocate, CopyFileRange, Readdir) do not check: like read(2) and
//     ftruncate(2), they were authorised when the file was opened, which
//     the vfs checks with Access.
//   - POSIX ACLs are the xattrs system.posix_acl_access and _default,
//     parsed and kept in step with the mode by acl.go with meta/acl.go's
//     rules. Only an inode flagged as having xattrs costs a read for them
//     (create under it, chmod, getxattr, untrusted checks). Untrusted
//     callers are checked against the ACL in Access, lookups, creates,
//     links and xattr access; the directory checks inside unlink, rmdir
//     and rename still use the mode alone (the kernel, which checks for a
//     mount, uses the ACL there too).
//
// # Quotas
//
// Volume limits (Format.Capacity, Format.Inodes) are checked by every
// operation that grows usage, against the stored counters plus this
// client's unflushed usage; on a volume with limits a client flushes its
// usage early, past a sixteenth of a limit, which bounds what all clients
// together can store past it (quota.go states the bound). ENOSPC.
// Directory quotas (meta.Quotas, dirquota.go) keep exact per-tree usage
// records, changed in the operations' own transactions, found through
// Attr.Parent, which every new inode records; EDQUOT past a limit, EXDEV
// for renames and links across quota trees. A volume without limits and
// without directory quotas pays neither: no extra read, no extra write.
//
// # Trash
//
// With Format.TrashDays set, the last unlink of a file or symlink (and a
// rename over one) moves it into /.trash/HOUR/ in the same transaction
// instead of deleting it; the trash directories carry an attr flag that
// refuses creates and makes unlinks in them final. The Engine implements
// meta.Trash (list, restore, empty, expire, set the days); trash.go has
// the design, trash_admin.go the admin side.
//
// # Snapshots and clones
//
// Clones and snapshots are tree copies (clone.go): new inodes with the
// same records, sharing slices by reference, made in one kv.Exclusive
// transaction so a tree is copied as it was at one instant while other
// clients' writes wait. A snapshot's inodes live under /.snapshots and
// carry flagFrozen; Engine.update refuses any change to a frozen inode
// with EROFS in one place (frozen.go), and the usage counters leave them
// out (snapshot.go). The copy counter ('N' copies) counts operations that
// give an existing slice a new holder, for gc (meta.CopyCounter).
//
// # Sessions and locks
//
// The Engine implements meta.Sessions and meta.Locker (session.go,
// lock.go): locks are records under the inode, qualified by the session of
// the client that took them; orphans and locks are indexed by session,
// and open files are recorded with their session, so that ending or
// reclaiming a session releases exactly what it held. It implements meta.OpenTracker (open.go): which sessions hold
// which files open, so that a file open anywhere outlives its last name.
// It implements meta.SessionReporter: the report a mount publishes for
// the web console is kept in memory and written into the session record
// by the next Heartbeat, in the rewrite the heartbeat makes anyway.
//
// # Admin work
//
// The Engine also implements the optional interfaces of meta/admin.go:
// meta.Scanner (orphans, every slice record, for session reclaim and gc),
// meta.Checker (fsck: link counts, parents, reference counts, orphan marks
// and usage counters recomputed from the entries and chunk records, with
// repair), meta.Dumper (a portable dump that restores into any kv
// backend; a restore leaves out sessions, their indexes and lock records,
// since the restored volume has no clients: restore.go; RestoreEdited
// edits the settings as they are written, for backups restored into a
// new bucket), meta.TreeDumper (one tree, a snapshot's, dumped as a volume
// of its own for backups, and DumpSlices, which lists the slices a dump
// names: dumptree.go), meta.LiveTreeDumper (the same of a live tree, read
// in one consistent read, kv.ConsistentRead: dumplive.go) and meta.Quotas
// (directory quotas), and meta.RunLog (the last fsck, gc and backup run,
// one counter key per job: runlog.go). SkipSliceIDs lets a loaded copy draw slice ids far
// from its source's, as the two share a bucket (volume.Adopt).
//
// Dumps carry no secret: a bucket URL with credentials in its user info
// (stored by old versions) is written to the dump without them.
//
// Import rules: kvmeta imports meta, kv and secret only, never a kv backend.
package kvmeta
