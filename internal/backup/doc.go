// Package backup writes and prunes periodic metadata backups in a
// volume's own object store, and owns the compression of dump streams
// that `shoal dump`, `shoal load` and the backups share.
//
// A backup is the engine's portable dump (meta.Dumper, docs/format.md),
// zstd-compressed with frame checksums, stored as one object
//
//	meta-backup/<UTC time, 20060102T150405Z>.dump.zst
//
// in the store given to Run. Give Run the store WITHOUT the block checksum
// wrapper: a backup is then a plain .zst file (for file storage, a file
// under the bucket directory) that `shoal load` reads directly, or that
// any zstd tool can decompress, and zstd's own checksums cover it.
//
// Invariants:
//   - a backup object appears whole or not at all: the dump is written to
//     a temporary file first and Put with its size (object.Store.Put is
//     atomic);
//   - keys sort by time, so the newest backups are the last keys; pruning
//     deletes only keys of that exact form, keeping the newest keep;
//   - a failed backup is logged and retried at the next interval: backups
//     never stop or slow the mount beyond one dump's reads.
//
// Consistency: the engine's Dump reads one key kind per read transaction,
// so a backup taken while the volume changes may hold, say, an entry
// whose inode was created after the inodes were read. `shoal fsck
// --repair` on the restored volume fixes such seams (dangling entries,
// link counts, reference counts); the data of files that existed in both
// reads is intact.
//
// Import rules: backup imports meta (the Dumper interface), object and the
// compression library; never an engine, vfs or cli.
package backup
