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
// path; Forget is a no-op because a node id stays valid for as long as the
// inode exists (a stale one gets ENOENT). The path-based fs.Inode API was
// rejected for that tree and its locking.
//
// Permissions: the mount uses the kernel's default_permissions, so access
// checks (with the caller's supplementary groups, which FUSE does not pass
// down) are made by the kernel; the context marks the caller as Trusted
// and the engine uses uid/gid only to own new inodes.
//
// Kernel caches: entries, attributes and negative lookups are cached for
// the configured timeouts (the bound on cross-mount staleness of names);
// page cache is kept across opens only while the file's mtime and size are
// unchanged (close-to-open).
package fusefs
