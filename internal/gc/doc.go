// Package gc finds and removes garbage in a volume's object store: block
// objects no slice refers to (leaked, e.g. uploaded by a client that
// crashed before committing the slice) and the objects of freed slices
// (slices whose last reference is gone; normally a mount's cleaner deletes
// them). It also reports damage it meets on the way: slices the metadata
// refers to whose objects are missing. On stores that keep temporary
// files of their own (the file store), it removes stale ones.
//
// It owns the collection algorithm and its report; the CLI (internal/cli,
// "shoal gc") opens the volume and prints. Import rules: gc imports meta
// (types, Engine, Scanner), object, data (BlockKey, ParseBlockKey, DeleteSlice) and
// identity (bucket claims); never an engine or backend package, vfs or cli.
//
// # The race with live writers
//
// A writer uploads the blocks of a new slice BEFORE it commits the slice
// to the engine (data's invariant 1). Between the two, its objects are in
// the store and referenced by nothing: to a collector they look exactly
// like leaked objects. Deleting one would lose data that fsync is about to
// acknowledge. A scan of the metadata is also not a snapshot: the engine
// gives a consistent view per inode only (meta.Scanner).
//
// The rule that makes this safe: an unreferenced object is deleted only if
// its ModTime is older than T0 − grace, where T0 is the store's clock read
// BEFORE the metadata scan starts. It rests on one assumption about writers:
//
//	(W) no client holds a stored block uncommitted for longer than grace.
//
// The data layer commits a slice within seconds of its last write
// (IdleCommit, 3 s; at most ten times that while it keeps growing), plus
// upload retries and engine outages, so the default grace of one hour
// leaves a wide margin. A block name a mount made ahead of its Put (an
// empty object, filestore/named.go) is written within two minutes of
// being made or never, but its ModTime is when it was made: so an empty
// object is deleted only if it is also older than PreparedGrace (ten
// minutes), unless the grace is a nanosecond or less (no client). Proof sketch: let o be an object of slice X with
// ModTime(o) < T0 − grace. If X was committed before the scan read the
// inode holding it, the scan saw X and o is live. Otherwise X commits after
// that read, which is after T0, so its writer held o uncommitted for more
// than grace, contradicting (W). Objects younger than the cut-off are only
// reported ("young"), never deleted.
//
// Steps, in this order, and why:
//
//  1. T0 from the store's clock: gc puts a probe object and reads its
//     ModTime back, so skew between this machine and an S3 server does not
//     matter. For file storage that is the local clock of the machine the
//     store directory lives on (gc must run there, as the mount does). A
//     dry run whose probe cannot be written (a read-only credential) falls
//     back to the local clock and says so in the report.
//  2. The freed list, read before the scan: a slice freed before the scan
//     started cannot be referenced by it, so a slice in both sets is damage
//     and is left alone.
//  3. The metadata scan (ScanSlices): the set of referenced slices.
//  4. The object listing, AFTER the scan. Every slice the scan saw was
//     committed, so its blocks were stored before the listing began; a
//     block missing from the listing is damage, unless the slice was freed
//     and deleted in the meantime, which gc re-checks (the block is Headed
//     again and the chunk re-read) before reporting it. Listing first would
//     report every slice written between the listing and the scan as
//     missing.
//  5. Deletion (unless a dry run): before deleting leaked objects, a second
//     scan confirms none of their slices became referenced. This covers a
//     gap in (W)'s proof: copy_file_range, a clone or a snapshot can give
//     an OLD slice a new holder — an inode created after the scan listed
//     the inodes — while the old holder drops it before the scan reaches
//     it. The confirmation scan narrows that window to two such moves
//     timed around two scans; the engine's copy counter
//     (meta.CopyCounter), read before the main scan and after the
//     confirmation, closes it: if any copy happened in between, no leaked
//     object is deleted this run (Report.Postponed), and the next run,
//     with no copy under way, decides.
//  6. Temporary files (unless a dry run): a store that keeps its own
//     beside the objects (TempRemover: the file store's unfinished Puts
//     and a mount's spare files, which a killed mount leaves) removes
//     those older than StaleTempAge, or any with no grace (temp.go).
//
// Freed slices' objects are deleted only with DeleteFreed, without grace:
// the engine says no reference remains, and none can come back (slice ids
// are never reused and references are only added by copying a live one).
// Their freed-list entries are dropped (ForgetFreed) after their objects
// are gone. Deletes are idempotent, so gc may overlap with a mount's
// cleaner or another gc.
//
// Before anything else, and again before deleting, gc checks that the
// volume is its bucket's only claimant (internal/identity). A volume
// loaded from a dump of another shares its blocks: each sees the other's
// blocks as leaked and frees blocks the other still reads. While a bucket
// has more than one claimant gc refuses to delete (ErrShared, with the
// claimants and what to do); a dry run reports and notes it. (An
// unclaimed bucket, a volume from before claims, is claimed on the way,
// except by a dry run.)
//
// What gc never deletes, besides young objects:
//   - keys under chunks/ that do not parse as block keys (or whose
//     directory levels do not match the id): foreign; nothing outside
//     chunks/ is looked at;
//   - blocks of a referenced slice that the slice does not have (wrong
//     index or size): a live slice's keys are final once stored, so these
//     point at a wrong block size or a bug, not at a crash;
//   - anything at all, when the store holds none of the objects of a
//     volume whose metadata refers to slices: it is probably not the
//     volume's store (a wrong bucket), and every object would look leaked.
//
// Memory: the referenced slices are held in a map (about 50 bytes per
// slice), and leaked keys in a list; a volume with tens of millions of
// slices needs a few GiB. A merge of two sorted streams would not, but
// needs sorted scans the engines do not offer yet.
package gc
