// Package filestore is the default object.Store: each object is a regular
// file under a root directory, at root/key, so key "chunks/0/1/123_0_4096"
// lives in root/chunks/0/1/123_0_4096.
//
// Invariants:
//   - Put is atomic and durable: the bytes go to a temporary file in the
//     object's directory, which is fsynced, renamed over the final name,
//     and then the directory is fsynced. Directories Put creates are
//     fsynced into their parents. A crash leaves the old object, the new
//     one, or nothing, plus at worst a temporary file. A Put with an
//     object.SyncBatch writes through the page cache and leaves the
//     fsyncs of the file and its directory to the batch's Sync: until
//     then a crash may also leave the new object incomplete.
//   - A Put with object.WithFreshKey (data blocks) of a key with no object
//     writes the object in place (or over a spare, below) and returns
//     once it is durable (the file fdatasynced, its directory fsynced
//     beside it): no temporary file, no rename, one journal commit
//     instead of two (fresh.go). A failed
//     one removes what it wrote; a crash may leave a part of the object
//     under the key, which nothing references. A key that has an object
//     takes the atomic path above.
//   - A store a mount asked to KeepSpares (the data layer does) writes a
//     small fresh Put over a spare file instead: a temporary file made
//     beforehand in the key's directory (its blocks allocated), then
//     fdatasynced with the Put's bytes beside its RENAME_NOREPLACE to the
//     key and the directory's fsync; Put returns once both are done (spare.go). A
//     crash leaves what an in-place Put may leave, or a spare; a key that
//     has an object is replaced atomically. Stopping it removes the
//     spares; a killed process leaves at most spareCount of them.
//   - A key made ahead with Prepare (the data layer's block names) is an
//     empty file, durable with its directory entry before any Put, with
//     the space allocated that the latest Put into a key prepared with
//     the same size hint took; a fresh Put of it within namedMaxAge
//     writes into it and fdatasyncs it, nothing more, and returns once
//     that is done (named.go); with an object.SyncBatch as well, it
//     returns once the bytes are written and their write-out started,
//     and leaves the fdatasync to the batch's Sync (putPrepared). Such
//     objects are listed like any; a killed process leaves them empty,
//     unreferenced, for gc. Unprepare removes the ones not used.
//   - Temporary files are named ".shoal-tmp-<random>"; O_EXCL creation makes
//     names unique, List never shows them, and keys may not contain a path
//     segment starting with that prefix. RemoveStaleTemp deletes leftovers.
//   - Keys are relative slash-separated paths: no leading or trailing '/',
//     no empty, "." or ".." segments, no NUL. Anything else is
//     ErrInvalidKey, so no key can escape the root.
//   - One key cannot be a directory prefix of another ("a" and "a/b"); Put
//     of such a key fails. Shoal's block keys never collide this way.
//   - Delete removes directories it leaves empty (never the root). Put
//     retries when such a removal races with it.
//
// List cost: List starts at the deepest directory named by the prefix and
// walks down in key order (entries sorted with '/' appended to directory
// names, so the order matches S3's byte order). Each directory it enters is
// read whole (os.ReadDir), because file systems return names unsorted;
// directories that cannot hold keys in (after, prefix] are skipped without
// reading them, and the walk stops once limit objects are found. With
// Shoal's block layout a leaf directory holds at most ~1000 slices' blocks,
// so a page costs a few directory reads however big the volume is.
// Each listed object costs one lstat for its size and time.
//
// Files are created 0600 and directories 0700: a volume's data is as
// private as its owner makes the mount, not world-readable on disk.
//
// Import rules: filestore imports object and the standard library only.
package filestore
