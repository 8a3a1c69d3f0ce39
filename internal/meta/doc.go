// Package meta owns Shoal's metadata model: the types every engine stores
// (inodes, attributes, directory entries, chunk slice lists, volume format),
// the Engine interface the vfs calls, the sentinel errors, and the POSIX rules
// that do not depend on an engine (posix.go; POSIX ACLs in acl.go: the xattr
// codec, mode sync, inheritance and the access check). Optional
// capabilities engines may have are found by type assertion: admin work
// (admin.go), sessions and locks (session.go), the trash of deleted files
// (trash.go), and what the web console reads (report.go: a mount's
// published activity, the last admin runs).
//
// Invariants every engine keeps:
//   - Each Engine method is one file-system operation and is atomic: it
//     happens whole or not at all, also under concurrency from other
//     processes and machines using the same volume.
//   - Expected POSIX outcomes are returned as bare syscall.Errno values
//     (ENOENT, EEXIST, ENOTEMPTY, ...). Anything else is wrapped with the
//     operation and ids, and callers map it to EIO.
//   - Permission checks use the credentials carried by the context
//     (WithCred); a context without credentials acts as root.
//   - A context may carry a Written (WithWritten): an engine that fills
//     it reports, after each commit, the attributes it wrote and the
//     inodes it deleted, as committed (kvmeta does); one that does not
//     leaves it empty, and the caller reads what it needs. Likewise an
//     Opened (WithOpened) in the context of OpenTracker.Open learns what
//     the open read beside the attributes (kvmeta: that the inode has no
//     extended attributes, and the first chunk's slice list when its
//     chunk cache holds it at the generation the open read).
//   - The access ACL and the mode are one: setting the ACL sets the mode,
//     chmod rewrites the ACL, an ACL equivalent to the mode is not kept,
//     and a parent's default ACL (else Cred.Umask) shapes what Mknod
//     creates.
//
// Import rules: meta imports only the standard library. Engines live in
// sub-packages and import meta, never the other way round.
package meta
