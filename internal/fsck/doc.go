// Package fsck checks a volume end to end: the engine's own metadata check
// (meta.Checker: entries, link counts, orphans, reference counts, counters)
// and the object-store half, which only a tool that sees both sides can
// do: every block of every referenced slice must exist in the store, have
// the stored size its length implies, and (unless verification is turned
// off) pass its checksums when read in full.
//
// It owns the check algorithm, its report and the repairs it may make; the
// CLI (internal/cli, "shoal fsck") opens the volume, draws progress and
// prints. Import rules: fsck imports meta (types and the optional admin
// interfaces), object (the store and its checksum wrapper), data (block
// keys, encoded and parsed); never gc, an engine or backend package, vfs
// or cli.
//
// # Steps
//
//  1. The engine's Checker (with repair when asked). Metadata repair runs
//     first so that the data checks below see the repaired tree.
//  2. The freed list, then a scan of every slice record (meta.Scanner):
//     for each referenced slice, its size and every (inode, chunk) that
//     holds it.
//  3. A listing of the store under chunks/: each block object is the
//     block of a referenced slice (live), of a freed slice (waiting for a
//     cleaner), or of nothing (leaked: a crash between upload and commit,
//     or an upload a live mount is about to commit). Listing AFTER the scan
//     means that every block the scan expects was stored before the
//     listing began (blocks are stored before their slice is committed).
//  4. For each expected block: absent from the listing (re-checked with
//     Head, since a slice freed and deleted meanwhile is not damage), a
//     stored size that no stored form of its length takes
//     (Options.SizeOK: one size for checksummed or encrypted blocks, a
//     range for compression frames), or, when verifying, a full read
//     through Options.Blocks (the volume's checksums, decompression and
//     decryption) that fails with
//     object.ErrCorrupt. Each such block is damage.
//  5. The files that hold damaged blocks, by path: one walk of the tree,
//     only when something is damaged.
//  6. With Repair and ZeroDamaged, the file ranges that show a damaged
//     block are punched into holes (they read as zeros afterwards; the
//     damaged slice loses those references). Without ZeroDamaged, damaged
//     data is only reported: fsck never silently replaces file contents.
//
// What counts as damage (Report.Damage): metadata problems left
// unrepaired, except usage counter drift (counters are deltas that lag on
// a mounted volume and drift after a crash), and files that read a
// damaged block. A damaged block that later writes or a zeroing repair
// shadow everywhere is listed but harms no read.
//
// Empty block objects no slice refers to are counted apart (Prepared):
// block names a mount made ahead of its writes (a block is never empty).
//
// Leaked objects are garbage, not damage: fsck counts them and points at
// `shoal gc`, which deletes them safely (with a grace period for live
// writers). fsck itself deletes no object.
//
// Memory: the referenced slices (about 80 bytes each plus their holders)
// and the listed keys of referenced slices are held in maps; a volume
// with tens of millions of blocks needs a few GiB, as gc does.
package fsck
