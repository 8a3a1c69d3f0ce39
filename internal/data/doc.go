// Package data moves file data between the vfs and an object store: files
// are cut into chunks (meta.ChunkSize, 64 MiB) by offset, each write to a
// chunk becomes a slice, and a slice's bytes are stored as immutable block
// objects of at most BlockSize (4 MiB). It owns the write buffer, the
// upload pipeline, the block read cache with read-ahead, compaction of a
// chunk's data, and deletion of a slice's objects.
//
// It knows objects, not the metadata engine: the vfs hands it slice lists
// to read and receives slices to commit through callbacks (IDFunc,
// CommitFunc). Import rules: data imports meta (types and Resolve only) and
// object; never an engine, a backend, or vfs.
//
// # Object keys
//
// Block i of slice id, whose size is b bytes, is the object
//
//	chunks/<id/1e6>/<id/1e3>/<id>_<i>_<b>
//
// with b = min(BlockSize, Size - i*BlockSize). Every block but the last of
// a slice is BlockSize long. Because the size is in the name, DeleteSlice
// enumerates a slice's keys from (id, Size) alone, and a reader detects a
// short or oversized object without a Head. Keys are never reused (slice
// ids are unique), and objects are never overwritten: a crash leaves at
// worst unreferenced objects, which gc collects, never a torn one that a
// slice refers to. Because a block's key is fresh and nothing refers to
// it before its Put returns, blocks are put with object.WithFreshKey: a
// file store writes them in place (no temporary file and rename, one
// journal commit fewer per fsync), and a crash mid-Put may leave a partial
// object under its key, unreferenced, which gc collects the same way. A
// Store asks the backend beneath the wrappers to keep spare files for
// such Puts, if it can (filestore: a small block is then written over a
// file made beforehand and renamed to its key, rather than
// created); Close stops it. A Store given Config.NewID also reserves slice
// ids ahead and has such a store make their small packs' keys durable
// before the Puts (named.go): keys of size classes (multiples of 4 KiB),
// a pack's object being padded with zeros up to its class, so that a
// pack of any small size then only writes and fdatasyncs its object.
// Close removes the unused ones; a killed mount leaves them, empty and
// unreferenced, to gc.
//
// # Write path
//
// Invariants:
//
//  1. Block Put before slice commit before Flush returns. A slice is
//     committed (CommitFunc) only after every one of its blocks is stored,
//     and Flush returns only after every slice written before it was
//     committed. This is what fsync() and close() rely on.
//  2. Commit order is write order. Slices get a sequence number when
//     created and commit strictly in that order, one at a time, so a
//     later write shadows an earlier one in the engine exactly as it did
//     in the buffer.
//  3. Stored bytes never change. Blocks below a slice's seal mark are
//     uploading or stored and take no more writes.
//  4. Nothing is dropped silently. A failed upload keeps its pages; Flush
//     (and Write, when it would wait on a full buffer) report the error;
//     a later Flush or the idle timer retries. Only Close after a failed
//     Flush drops data, and it returns the error.
//
// Steps of Write(off, p), per chunk piece:
//
//  1. Wait for room in the shared write buffer (BufferSize). While blocks
//     are uploading, waiting frees space; if none are, waiting alone never
//     would, so open slices are frozen (first this writer's, then all
//     writers') to push their partial blocks out.
//  2. Find a slice to extend among the chunk's newest uncommitted slices:
//     the write must start inside the slice's unsealed tail or at its end,
//     and no newer slice may overlap the write (it would shadow the
//     extension, by invariant 2). Otherwise start a new slice.
//  3. Copy p into the slice's pages (16 KiB units from a sync.Pool, so a
//     4 KiB random write costs 16 KiB, not 4 MiB, and sequential writes
//     never copy a growing buffer).
//  4. Seal every block the write completed and upload it in the
//     background (Uploads at a time, each tried once: the store beneath
//     retries, see volume.OpenStore). The slice id is requested lazily by
//     the first block to upload.
//  5. A slice that reaches the chunk end freezes: its last partial block
//     uploads, and it commits once all its blocks are stored. Slices idle
//     for IdleCommit (or open for ten times that) freeze too, and so do
//     all of a writer's slices on Flush. A small frozen slice still
//     wholly in memory joins a pack instead: one object for many small
//     writes (pack.go).
//  6. Ready slices at the head of the queue commit together, up to
//     maxCommitBatch per CommitFunc call (one engine transaction).
//
// Stored-but-uncommitted blocks look like garbage to gc until the commit
// lands; gc spares objects younger than its grace period (an hour by
// default). A commit delayed by an engine outage for longer than half that
// first checks (Head) that its blocks are still there, and fails loudly
// if one is gone rather than commit a reference to nothing.
//
// Commits run on a goroutine of the Writer, never on the caller's: Write
// and Flush may be called with vfs locks held that CommitFunc needs too.
// The upload that stores the last block the head slice waited for runs
// the commit itself (claimCommit), so an fsync's path hands off between
// goroutines twice (Flush to the upload, the commit back to Flush), not
// three times.
// When the head slice waits only for a small pack whose name was made
// durable ahead, and the engine honours commit gates (Config.GatedCommit),
// the upload runs the commit's transaction while the pack's bytes are
// written out and makes the object durable just before the COMMIT
// (gated.go, meta/gate.go): invariant 1 holds, since the engine commits
// only after the gate, which returns once the object is durable.
// Pages return to the pool as soon as their block is stored; a slice
// waiting only for its commit holds no buffer.
//
// Rejected alternatives:
//   - One contiguous buffer per slice or block, grown on demand (copies on
//     growth) or allocated at BlockSize (4 MiB per random 4 KiB write).
//   - Per-chunk commit queues: they would let chunks commit independently,
//     but one writer-wide order is simpler to reason about and costs
//     little, since the oldest slices are the first to become ready.
//   - Committing in Write/Flush's goroutine: a deadlock risk with vfs
//     locks, see above.
//   - Rewriting an uploading block in place, or re-uploading it under the
//     same key: objects would no longer be immutable. A write into a
//     sealed block starts a new slice instead.
//
// # Read path
//
// Reader.Read resolves the chunk's slice list with meta.Resolve, fills
// holes with zeros and copies each visible piece block by block. The
// Reader keeps the last few whole-chunk paintings, keyed by a copy of the
// list they came from, so a fragmented chunk read piecewise is painted
// once, not once per read (Resolve is O(n log n) in the list length).
// Blocks come from a byte-bounded LRU shared by the Store, loaded
// singleflight style (concurrent loads of a block share one Get); a
// reader that cannot be cancelled (a FUSE read) runs the Get itself
// rather than hand it to a goroutine and wait, one wake-up less per cold
// block. A Reader that sees consecutive offsets fetches whole blocks and
// prefetches ahead of itself in the background, a window that ramps from
// two blocks to ReadAhead as the run grows (into the next chunk too, when
// the Reader was given a ListFunc to list it); a random reader reads only
// the bytes it needs with a ranged Get, straight into the caller's
// buffer. Reader.Warm, called at open, lists chunk 0 and loads in the
// background the blocks the file's first read will fetch whole anyway.
// A block of the wrong size is ErrCorrupt (which is object.ErrCorrupt, so
// a checksum mismatch is the same class), a missing one wraps
// object.ErrNotExist; the error names the inode, file offset and key and
// is logged once. Wrong bytes are never returned.
//
// Rejected for reads: recycling block buffers of the cache through a
// pool. It would save zeroing and garbage, but a reader still copying
// from an evicted block would then see another block's bytes; without
// reference counting on every path, a wrong-bytes bug is one refactor
// away.
//
// # Reading your own writes
//
// Writer.Pending snapshots the uncommitted bytes of a chunk range (copied
// from the buffer, or located in the store for blocks already uploaded and
// released); Pending.Apply paints them over what Reader.Read returned from
// the committed list. Taking the snapshot before fetching the list makes
// the pair race-free against background commits (see Pending);
// Reader.ReadThrough does the three steps in that order. This lets
// the vfs serve a read after a write without flushing, which would cut
// slices short and cost a commit per read.
//
// # Compaction
//
// Compact reads a chunk's visible data and writes it again through a
// private Writer, one slice per run of data; holes of at least 1 MiB stay
// holes. The caller swaps the slice lists in the engine.
package data
