// Package journal owns the mount's local journal: the one place, outside
// the serving process's memory, where a mount keeps what a replacement
// process needs to carry on serving the same kernel connection — after a
// deliberate upgrade or a kill -9 — without applications noticing.
//
// It holds, in files of a directory on a local disk (a runtime directory
// per mountpoint; only the page cache is needed, since it survives the
// death of a process, not of the machine):
//
//   - the open file and directory handles the kernel knows (fh, inode,
//     open flags), the lock owners that took locks through them and
//     whether a handle holds locks, and the engine session the mount
//     works for: the state a new process must adopt as its own;
//   - every write this mount acknowledged that is not yet committed to
//     the engine and the object store (inode, offset, bytes), written
//     before the write is acknowledged; a barrier record, appended after
//     a flush of the inode committed everything journaled before a
//     mark, makes the earlier records dead;
//   - the replies to the latest requests that must not run twice (a
//     create, mkdir, unlink, rename, open, O_APPEND write...), each under
//     the kernel's id of the request and written before the reply, so
//     that a successor answers the kernel's resend of one the dead
//     process never answered as it was answered, instead of running it
//     again; and, written before such a request changes anything, its
//     intent, so that a successor knows a request may have committed
//     when the process died before recording its reply (replies.go:
//     what is kept, and for how long);
//   - the kernel's INIT request (file "init"), which a new go-fuse server
//     must see before it serves a connection that was set up long ago;
//   - the UUID of the volume the mount serves (file "volume"), so that a
//     journal left by a mount that died whole (supervisor and server) is
//     applied by the next mount of the same volume only.
//
// Ownership. The directory is one process's at a time, the one holding
// the flock of the file beside it (DIR.lock) until it exits (Acquire,
// lock.go): a process deletes only segments of a journal
// it owns, so a server still closing after an umount(8) cannot remove the
// journal of the mount made at the same place right after (which waits
// for the lock), nor can that mount salvage writes the old server is
// still committing.
//
// Format. The journal is a sequence of segment files seg-NNNNNNNNNNNNNNNN,
// each a sequence of records: a 4-byte little-endian payload length, a
// CRC-32C of kind and payload, a kind byte and the payload. A record cut
// short or failing its CRC ends the segment (the process died inside the
// append: the operation was never acknowledged). Every segment begins with
// a checkpoint of the handle state and the kept replies, so that a segment
// whose writes are all committed can be deleted: when a segment grows past
// its size the journal starts the next one and asks its owner to flush
// every file (Options.Sync); once that returns, the older segments are
// deleted. The journal therefore holds at most about two segments plus
// what the write buffer holds (a segment grows past its size while that
// flush runs), and a spare: the file of the segment before the current
// one, cut to about the segment size and kept (as "spare", not a segment
// name) to become the next segment, since writing over pages the page
// cache holds costs a copy where new pages cost an allocation each
// (segment.go). Records are copied into a shared mapping of the segment,
// not written with a system call each; the 9 bytes after the last record
// are always zero, so a reused file's old bytes never read as records.
//
// Versions. The checkpoint names the format its segment is written in
// (Format, 3); format 1 had no version there, no request ids and no
// replies, format 2 no intents, and both are read as before. Recover
// refuses a later format (ErrNewerFormat) rather than misread it. Binaries of format 1 check no
// version and would stop reading at the first reply record, dropping the
// writes after it; so Create also makes a directory seg-0000000000000000
// (no segment has number 0), which they fail to read as a segment: they
// refuse the journal. docs/format.md describes the records.
//
// Recover reads a journal back: the handle state as of the last record,
// the live writes in journal order and the kept replies. A new process
// applies them and then starts a fresh journal (Create) with a checkpoint
// of what it adopted.
package journal
