// Package fusefs is the thin adaptor between the kernel's FUSE protocol
// (github.com/hanwen/go-fuse/v2, the only importer of it in Shoal) and
// package vfs. Each operation builds a context with the caller's identity,
// calls one vfs method and fills the reply; errno.go holds the single
// mapping from Go errors to errno.
//
// Choice of API: go-fuse's raw fuse.RawFileSystem, with FUSE node ids equal
// to Shoal inode numbers (RootIno = 1 = FUSE_ROOT_ID). The volume is
// addressed by inode number in the engine, so there is no in-memory tree to
// keep coherent with other machines, and no per-node bookkeeping on the hot
// path beyond the kernel's lookup counts (kattrs.go); Forget only takes
// those off, because a node id stays valid for as long as the inode exists
// (a stale one gets ENOENT). The path-based fs.Inode API was
// rejected for that tree and its locking.
//
// Permissions: the mount uses the kernel's default_permissions, so access
// checks (with the caller's supplementary groups, which FUSE does not pass
// down) are made by the kernel; the context marks the caller as Trusted
// and the engine uses uid/gid only to own new inodes. POSIX ACLs are
// negotiated (FUSE_POSIX_ACL): the kernel fetches an inode's ACL with
// getxattr(system.posix_acl_access), caches it until it next refreshes the
// inode's attributes (so another mount's change shows within the attribute
// timeout), and enforces it. It leaves the rest to the file system, which
// the engine does (meta/acl.go): setting the access ACL updates the mode,
// chmod updates the ACL, and creates apply the parent's default ACL. With
// FUSE_DONT_MASK the kernel sends a create's mode unmasked and its umask
// beside it (createCtx puts it in meta.Cred.Umask), because a default ACL
// replaces the umask; SETXATTR_EXT carries the kernel's verdict that
// setting an ACL must clear setgid (meta.XattrACLKillSgid).
// HANDLE_KILLPRIV_V2 leaves clearing setuid and setgid to the mount: the
// kernel flags a write, a truncate or an open(O_TRUNC) by a caller without
// CAP_FSETID, and every chown, and the adaptor clears them
// (vfs.FS.KillSuidgid, meta.SetKillSuidgid) before it answers; the kernel
// in return checks security.capability once per inode (SB_NOSEC) rather
// than with a getxattr before every write, and still removes file
// capabilities itself on the first write after they were set.
// After a clone (setxattr of vfs.CloneXattr) the adaptor drops a negative
// entry the kernel may hold for the new name, from a goroutine: the kernel
// holds the directory's lock until the setxattr is answered.
//
// Metrics (metered.go): with Options.Ops set, the server is given a
// wrapper that times every request and reports it by operation number
// (OpNames) with its outcome, and the bytes of reads and writes; the ops
// themselves are untouched. Every mount the CLI starts has an observer
// (opstat's Recorder, for the session report and `shoal console`), so
// each request costs a clock read and a few atomic adds, with or without
// --metrics; only an FS built without Options.Ops (tests) is served
// directly.
//
// Kernel caches: entries, attributes and negative lookups are cached for
// the configured timeouts (the bound on cross-mount staleness of names);
// page cache is kept across opens only while the file's mtime and size are
// unchanged (close-to-open). An open that may see another mount's changes
// also drops the kernel's attributes (forgetAttr), unless the kernel holds
// the ones the open read, for certain: from a reply it took
// unconditionally (a create, or the entry that made its inode), with no
// reply carrying other attributes since (kattrs.go). That saves the first
// read of a file the kernel had not cached a GETATTR round trip. A lookup
// or readdirplus entry answered from what a listing read before the
// request (vfs listings) gets timeouts shortened by the read's age
// (fillEntryRead). Every operation that may
// change an inode or a name, or make the kernel forget one, tells the vfs
// when it is done, before the reply (enterChange -> vfs.FS.Changed);
// getattr and engine lookups tell it per inode (vfs.FS.Refreshed).
// The kernel drops a directory's attributes on every entry change in it
// and, checking permissions, asks for them before the next: a GETATTR of
// a directory this mount just changed is answered from the attributes the
// engine reported its change committed (dirattrs.go, meta.Written), for
// what is left of the attribute timeout counted from the change, and only
// while no other change of this mount may have followed it.
//
// Takeover (takeover.go): a server can serve a connection a supervisor
// keeps (MountFd) and a successor can take it over (TakeOver) by replaying
// the kernel's INIT to go-fuse, moving the connection under go-fuse's
// descriptor number and asking the kernel to resend unanswered requests.
// Every operation but a blocking lock wait passes a gate, so that Quiesce
// can let the requests in flight finish and hold the rest back for the
// successor (a blocking lock passes it once granted); AwaitReplies then
// waits until go-fuse has written the replies of those that finished
// (replies.go).
//
// Resent requests (resend.go): every op that changes something records
// its outcome in the journal, under the kernel's request id, before
// answering (opens and O_APPEND writes inside the record vfs already
// writes, the rest in one reply record, a failure too); a successor
// answers the kernel's resend of such a request (FUSE_UNIQUE_RESEND)
// from it instead of running it again. A name or xattr change records its
// intent before it commits (vfs, intent.go), and a resend that finds only
// the intent is checked against the volume (committed.go, which says
// what it cannot tell). So a crash between an operation's start and its
// reply shows no EEXIST for an application's own create, no undone
// exchange, no second handle, no append written twice. The test hook
// KillEnv (killhook.go) crashes a server at each of those points.
package fusefs
