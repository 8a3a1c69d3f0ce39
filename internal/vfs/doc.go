// Package vfs owns Shoal's POSIX semantics above the metadata engine and the
// data layer: open file handles, the per-inode state of open files (write
// buffers, cached slice lists, pending length), close-to-open consistency,
// unlinked-but-open files, background compaction of fragmented chunks and
// deletion of freed slices. It never imports go-fuse: the FUSE adaptor, the
// tests and future gateways all call the same FS methods.
//
// # Write path and close-to-open
//
// A write goes into the inode's data.Writer, which stores blocks in the
// object store in the background and calls back (commit) to record each
// finished slice in the engine, in write order. Flush (every close(2)) and
// Fsync wait until every byte written so far is stored and committed, so an
// open(2) that starts afterwards on any machine sees the data, size and
// mtime. Until then this mount overlays the pending length and mtime on the
// engine's attributes, so its own stat(2) calls see its writes at once.
//
// A read resolves the chunk's slice list — cached per open inode and
// dropped on every open(2), which is what makes other machines' closes
// visible (the open may install chunk 0's list again, as of its own
// engine read, when the engine had it at hand: meta.Opened) — reads
// blocks through the data layer, and paints this mount's
// unflushed writes over them (data.Reader.ReadThrough), so it never
// flushes. Readers of one list share its engine read while it is in
// flight (of the current generation: one begun after the last
// invalidation). An open for reading of a file whose pages the kernel
// does not keep starts that read for chunk 0 in the background and loads
// the small blocks of its first 128 KiB (data.Reader.Warm): the kernel's
// first read arrives a few round trips later and finds them loaded or
// loading, instead of paying the list and a cold object read in a row.
//
// # Unlinked files
//
// When the last name of an inode goes while this mount or any other holds
// it open, the engine keeps it as an orphan; it is purged when the last
// holder lets go. With a meta.OpenTracker engine the vfs tells the engine
// of every handle: Open (one call that reads the attributes, checks
// access and, for the first open of the inode in this mount, records it
// under the mount's session) or Create (Mknod with Open, recorded in the
// create's own transaction), and a Release per handle release, after the
// last one's flush. The engine drops the record in the background (a
// kvmeta engine keeps it a while, so that a reopen soon after writes
// nothing, but drops it at its next flush when another mount made the
// inode an orphan) and purges an orphan nobody else holds; an orphan this mount
// unlinked is purged by its last Release at once. A mount that dies is
// reclaimed with its session, which drops its records; a server that takes
// over the session drops those of files it does not hold
// (meta.OpenAdopter). An inode open nowhere is deleted by the unlink
// itself.
//
// # Sessions and fenced locks
//
// Locks live in the engine (lock.go) and belong to this mount's session,
// which a heartbeat keeps alive (session.go); another mount reclaims it
// when it has been silent for its own timeout on the engine's clock. So
// that a lock never has two holders, the mount fences itself earlier:
// past a lease of timeout − max(heartbeat, timeout/4) since its last
// successful heartbeat was sent, writes, fsyncs and lock calls through the
// descriptors that took locks fail with EIO, and the commits of the files
// they hold are refused; engine calls made for a lock carry the lease's
// end as their deadline. A later successful heartbeat lifts the fence; a
// reclaimed session fails those descriptors until they are closed. The
// design and the rejected alternatives are in fence.go.
//
// Before each heartbeat the mount's report (SessionConfig.Report: its
// operations and slow ones, counted at the FUSE adaptor) gets this FS's
// open files and locked inodes and goes to the engine, which stores it
// with the heartbeat (meta.SessionReporter) for `shoal console`.
//
// # Clones
//
// Clone (clone.go) copies a file or tree through meta.Cloner after
// committing this mount's acknowledged writes. The FUSE adaptor reaches
// it through a control xattr, CloneXattr, set on the destination
// directory: Setxattr runs the clone instead of storing the name, with
// the caller's identity the kernel sent.
//
// # Freed data
//
// Truncate, overwrite-compaction and purge free slices in the engine. A
// background cleaner deletes their objects, but only after a slice has
// been seen freed for DeleteDelay, so readers on other mounts holding an
// older slice list can finish; a read that still hits a deleted object
// refetches the slice list and retries once. The cleaner reads the freed
// list in short pages, a bounded number a tick, and remembers when it
// first saw each slice (one engine request is one transaction, and on
// Redis one script that holds the server). Before each batch of deletes
// it asks Config.MayDelete: while the volume shares its bucket with
// another (a copy loaded from a dump, see internal/identity) nothing is
// deleted and the slices stay freed until it does not. About once a
// minute it also expires the trash (meta.Trash.ExpireTrash), whose deleted
// files free their slices the same way.
//
// # Listings
//
// An open directory is read a page at a time (8192 names, or 1000
// entries with attributes), the next page in the background while the
// kernel consumes one (dir.go; after the first page, read with
// attributes, the names after it, which the kernel asks for next). A
// rewind reads afresh. Each
// name is read once: a request with attributes reads no page once it has
// had what the kernel's buffer holds, and names read ahead serve any
// request for names inside them, also after one page with attributes
// read meanwhile (the kernel asks for one after a lookup). The
// kernel asks for attributes with the first page and while listed names
// are looked up (readdirplus); a page read with attributes answers its
// later requests only while this mount completed no operation since it
// was read (Changed) and for half the shorter cache timeout, since the
// kernel would take older attributes as news. The lookups that follow a
// listing are answered from what it read (listing.go, which keeps the
// pages as read and finds a name by binary search): the first lookup of
// a listed name reads the attributes of it and the 1000 names after it in
// one engine read, the next ones take theirs from that read, under the
// same rules plus one per inode (Refreshed: the kernel was told the inode
// afresh since). The adaptor shortens the kernel's timeouts of such an
// answer by its age, so nothing is cached longer after its engine read
// than a fresh reply would be; with --strict (no timeouts) nothing is
// shared.
//
// Stats (stats.go) reports the mount's gauges on demand for metrics: open
// handles and files, locked files, the compaction queue, the cleaner's
// last count of freed slices, and the age of the session's last renewal.
//
// # Takeover
//
// With a journal attached (package journal), handles, locks taken through
// them and acknowledged writes are recorded before the kernel hears back,
// and a barrier after each flush marks a file's earlier writes committed;
// a successor process resumes the session and Adopts what the journal
// holds (takeover.go). An open and an O_APPEND write that answer a kernel
// request (WithRequest) record its id with them, so that the adaptor can
// answer the request's resend with the adopted handle or the replayed
// write's byte count; a release is recorded after it is done, so a
// successor that adopts the handle again releases it on the resend.
// A name or xattr change answering a request records its intent before
// the engine commits it, a create's with the new inode's number
// (intent.go), so that a successor can tell whether it committed.
//
// Import rules: vfs imports meta, data, object and journal (never an
// engine or backend package, never go-fuse).
package vfs
