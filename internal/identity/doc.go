// Package identity owns the claims a volume writes into its bucket, and the
// rule built on them: a volume deletes objects from a bucket only while it
// is the bucket's sole claimant.
//
// # Why
//
// A volume is an engine (the metadata) plus a bucket (the blocks), and
// nothing in a block says which volume wrote it. `shoal load` of a dump
// into a second engine makes a copy that refers to the same blocks as its
// source. Each engine then sees the other's blocks as unreferenced: gc
// deletes them as leaked, and a mount's cleaner deletes the blocks of
// slices it freed although the other volume still reads them. Both were
// seen in the field (EIO, and fsck listing missing objects on the copy).
//
// # Claims
//
// Every volume that keeps its blocks in a bucket has one small JSON object
// there (docs/format.md):
//
//	volumes/<uuid>.json   {"uuid", "name", "created", "claimed", "how", "origin"}
//
// written by `shoal format`, by `shoal load` (the copy's own claim), or by
// the first mount of a volume older than claims (it claims an unclaimed
// bucket once). No secrets: only the volume's name, uuid and times.
//
// The rules, and who applies them:
//
//   - Opening a volume (Check; volume.Open for every mount) requires the
//     volume's own claim in the bucket, or no claim at all (then it writes
//     its own). A bucket claimed only by others is refused: the engine is
//     not one of the bucket's volumes (its claim was released, or it was
//     restored by an older binary), and letting it in could lose data.
//   - Deleting block objects (Exclusive: gc, and the mount's cleaner of
//     freed slices before every batch) requires that the volume is the
//     only claimant. While a bucket has two claimants nothing is deleted
//     by either: space is kept, never data. fsck deletes no objects. Rare
//     deleters that know nothing of claims (the pruning of metadata
//     backups) get a store wrapped by Guard.
//   - A claim is removed only by a person who knows its engine is gone
//     (`shoal claims --release`), or by `shoal load --replace`, which
//     releases the claim of the volume the dump came from.
//
// # Alternatives rejected
//
//   - One owner uuid per bucket, kept by a restore: a copy loaded with the
//     same uuid is indistinguishable from its source, which is exactly the
//     twin the bug report describes. A loaded volume therefore always gets
//     a new uuid; --replace hands the bucket over by releasing the old one.
//   - Giving a copy a key prefix of its own: its files still refer to the
//     source's blocks, so the source's deletes would still hurt it.
//   - Taking the union of the claimants' references in gc: gc would need
//     every other engine's URL and credentials.
//
// Claims are checked, not locked: a claim written between a check and the
// deletes that follow it (a load finishing during a cleaner round) is not
// seen by that round. A copy can only ever rely on the blocks that existed
// when its claim was written anyway: blocks its source deleted between the
// dump and the load are gone (fsck of the copy lists them).
//
// Import rules: identity imports meta (Format) and object; nothing else of
// Shoal.
package identity
