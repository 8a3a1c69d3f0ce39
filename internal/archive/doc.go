// Package archive makes, lists, verifies, deletes and restores backups of
// a live volume in another object store (a directory or an S3 bucket):
// each backup is a snapshot's metadata plus every block it references,
// enough to rebuild the volume elsewhere on any engine.
//
// A backup is taken from a snapshot (meta.Snapshots), so it is the tree
// as it was at one instant while mounts keep writing; the snapshot is
// deleted when the backup is written (Options.KeepSnapshot keeps it). Its
// metadata is written with meta.TreeDumper: the snapshot's tree as the
// dump of a volume of its own, which meta.Dumper.Restore reads into any
// engine kind.
//
// Layout of a destination (docs/format.md):
//
//	chunks/...                     blocks, byte for byte as the volume stores them
//	backups/NAME/dump.zst          the tree dump, zstd (sealed on an encrypted volume)
//	backups/NAME/manifest.json     what the backup is: written last
//
// Blocks are copied raw, under the volume's own keys: a block is immutable
// and its key (data.BlockKey) names its slice, index and length, so a key
// present in the destination with a stored size the volume's format allows
// is that block. That is what makes backups incremental: the destination's
// blocks are listed once, and only the missing ones are copied, in
// parallel. Because keys are unique only within one volume, a destination
// holds the backups of one volume (by uuid); Create refuses another's.
//
// A backup appears whole or not at all: blocks first, then the dump, then
// the manifest; List shows only backups with a manifest. A backup that
// stopped half-way leaves blocks the next one reuses. Delete removes the
// manifest first; with prune it then deletes the blocks no remaining
// backup references, except those written in the last PruneGrace (a
// backup running at the same time may have just copied them).
//
// Blocks and the dump stay as the volume's format made them (checksums,
// compression, encryption), so the manifest carries the format (without
// credentials: the wrapped key only) and a restored volume keeps it:
// Verify reads every block back through the same wrappers
// (volume.BlockStore) and Restore needs the volume's secret only to read
// the sealed dump of an encrypted volume.
//
// Restore never writes into the backup's store: it copies the blocks to a
// new bucket, then restores the dump into an empty engine with its
// settings pointing at that bucket and a new uuid, written last (an
// interrupted restore leaves an unformatted engine), and claims the bucket.
//
// Import rules: archive imports meta, object, data (block keys), backup
// (dump compression), identity and volume (stores, wrappers, claims), and
// kvmeta only for its pure dump reader (kvmeta.DumpSlices); never vfs or
// cli.
package archive
