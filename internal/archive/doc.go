// Package archive makes, lists, verifies, deletes and restores backups of
// a live volume in another object store (a directory or an S3 bucket):
// each backup is the metadata of one tree of the volume, as it was at one
// instant, plus every block it references, enough to rebuild the volume
// elsewhere on any engine.
//
// # Taking a backup: one consistent read, not a snapshot
//
// A backup reads the live tree in one consistent read of the metadata
// (meta.LiveTreeDumper: a View, which is an MVCC snapshot on SQLite and
// PostgreSQL, so mounts go on writing; on Redis an Exclusive, during which
// writers wait) and writes it as the dump of a volume of its own, which
// meta.Dumper.Restore reads into any engine kind. So it is the tree as it
// was at that instant: what mounts had flushed or fsynced then.
//
// The read holds nothing: a slice the dump names may be freed right
// after it (a file rewritten or deleted) and its blocks deleted, by a
// mount's cleaner after DeleteDelay (30 s) or by `gc --delete-freed` at
// once. Blocks are immutable and their keys never reused (data.BlockKey
// names the slice id), so a block the backup reads is the block the dump
// names, whenever it is read; the only way to lose one is that it is gone.
// So Create copies the blocks it needs and, if the volume lacks one
// (errSrcMissing), takes the backup again from a snapshot
// (meta.Snapshots), whose references hold every block it names until it
// is deleted; the blocks copied already are kept. A backup thus never
// names a block it did not copy or find in the destination. The snapshot
// path is also taken with Options.KeepSnapshot, and for engines without
// meta.LiveTreeDumper.
//
// Blocks are copied while the tree is read (copyJob): the dump reports
// each slice as it reads its chunk records (meta.LiveDump.Slice), and
// workers copy the blocks of those the destination lacks, so the copy
// and the read overlap instead of adding up. The blocks are written
// without an fsync each and made durable together (object.SyncBatch)
// before the index and the manifest are written.
//
// Rejected: taking a snapshot for every backup (what backups did first).
// It is correct without a fallback, but a snapshot copies every inode's
// records and takes a reference per slice, and deleting it removes them
// again: for 10,000 files that was most of an incremental backup's time,
// to hold blocks that are almost never deleted within a backup's copy.
// Holding references some cheaper way (a per-backup list of slices that
// gc and the cleaners consult) would change every deleter of blocks.
//
// # Layout of a destination (docs/format.md)
//
//	chunks/...                     blocks, byte for byte as the volume stores them
//	backups/NAME/dump.zst          the tree dump, zstd (sealed on an encrypted volume)
//	backups/NAME/blocks.zst        the block index: the blocks the backup references
//	backups/NAME/manifest.json     what the backup is: written last
//
// Blocks are copied raw, under the volume's own keys: a block is immutable
// and its key (data.BlockKey) names its slice, index and length, so a key
// present in the destination with a stored size the volume's format allows
// is that block. That is what makes backups incremental: only the blocks
// the destination lacks are copied, in parallel. Because keys are unique
// only within one volume, a destination holds the backups of one volume
// (by uuid); Create refuses another's. Create reads one manifest, the
// newest (by its write time): it checks the uuid and is the base below.
//
// What the destination holds is taken from the newest backup's block
// index (each slice of its dump with the stored sizes of its blocks),
// not from a listing, which costs a request per thousand blocks and, on
// a directory, a stat per block: every block a backup references is in
// the destination, and stays while the backup does (Delete prunes only
// blocks no remaining backup references). Trust is checked cheaply: a
// few of the blocks taken as present, picked at random, are looked up
// first, and if one is missing or of the wrong size the destination is
// listed after all; so is it when the newest backup has no index (made
// by an older binary) or there is no backup yet. `backup verify` reads
// every block back.
//
// A backup appears whole or not at all: blocks first (synced), then the
// index and the dump, then the manifest; List shows only backups with a manifest.
// A backup that stopped half-way leaves blocks the next one reuses (when
// it lists the destination) or copies again. Delete removes the manifest
// first; with prune it then deletes the blocks no remaining backup
// references, except those written in the last PruneGrace (a backup
// running at the same time may have just copied them). A prune must not
// run beside a backup that builds on the backup being deleted: the
// running backup may take that backup's blocks as present just before
// the prune deletes them (the same holds of blocks found by listing).
//
// Blocks and the dump stay as the volume's format made them (checksums,
// compression, encryption), so the manifest carries the format (without
// credentials: the wrapped key only) and a restored volume keeps it:
// Verify reads every block back through the same wrappers
// (volume.BlockStore) and Restore needs the volume's secret only to read
// the sealed dump of an encrypted volume. The block index names only
// slice ids and sizes, which the block keys show anyway: it is not sealed.
//
// Directory quotas are not in the dump (a tree dump leaves them behind,
// kvmeta/dumptree.go): the manifest lists those of the tree by path and
// limits, read after the tree, and Restore sets them again, which counts
// their usage over the restored tree.
//
// Restore never writes into the backup's store: it copies the blocks to a
// new bucket, then restores the dump into an empty engine with its
// settings pointing at that bucket and a new uuid, written last (an
// interrupted restore leaves an unformatted engine), and claims the bucket.
//
// Import rules: archive imports meta, object, data (block keys), backup
// (dump compression; klauspost/compress/zstd directly for the dump's
// level), identity and volume (stores, wrappers, claims), and
// kvmeta only for its pure dump reader (kvmeta.DumpSlices); never vfs or
// cli.
package archive
