package fusefs

import (
	"context"
	"log/slog"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"shoal/internal/meta"
	"shoal/internal/vfs"
)

// Options are the kernel cache settings of a mount.
type Options struct {
	AttrTimeout     time.Duration // how long the kernel caches attributes
	EntryTimeout    time.Duration // how long the kernel caches names
	NegativeTimeout time.Duration // how long it caches "no such name"
	Logger          *slog.Logger
	// Ops, when set, is told of every request (metered.go); nil costs
	// nothing.
	Ops Observer
	// Kill is a test hook (KillEnv): STAGE:OP:PATH.
	Kill string
}

// FS serves a vfs.FS over FUSE.
type FS struct {
	fuse.RawFileSystem
	vfs   *vfs.FS
	opts  Options
	errs  errnoMapper
	posix posixOwners // POSIX lock owners to release on close (locks.go)
	gate  gate        // holds requests back during a handover (takeover.go)
	// replies answers resent requests that already happened (resend.go).
	replies replyCache
	// dirs are directory attributes from this mount's changes, for
	// GETATTR (dirattrs.go).
	dirs dirAttrs
	// kattrs knows when the kernel holds an inode's current attributes,
	// so that an open need not drop them (kattrs.go).
	kattrs kernelAttrs
	// server is the serving go-fuse server (set by Init), through which
	// the kernel's caches of an inode are invalidated (files.go).
	server *fuse.Server
}

var _ fuse.RawFileSystem = (*FS)(nil)

// New returns the adaptor for v.
func New(v *vfs.FS, opts Options) *FS {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &FS{
		dirs:          dirAttrs{ttl: opts.AttrTimeout},
		RawFileSystem: fuse.NewDefaultRawFileSystem(),
		vfs:           v,
		opts:          opts,
		errs:          errnoMapper{log: opts.Logger, logged: map[string]bool{}},
		replies:       replyCache{log: opts.Logger, kill: parseKillHook(opts.Kill)},
	}
}

// Init implements fuse.RawFileSystem: it keeps the server for cache
// invalidations.
func (fs *FS) Init(s *fuse.Server) { fs.server = s }

// String names the file system for go-fuse's debug output.
func (fs *FS) String() string { return "shoal" }

// ctx returns the context an operation runs in: the caller's identity,
// trusted because the kernel checks permissions (default_permissions).
// Cancellation is deliberately not wired: an interrupted flush must still
// commit what the application already wrote.
func ctx(h *fuse.InHeader) context.Context {
	return meta.WithCred(context.Background(), meta.Cred{Uid: h.Uid, Gid: h.Gid, Trusted: true})
}

// createCtx is ctx for an operation that creates an inode: with POSIX ACLs
// negotiated the kernel sends the mode unmasked and the caller's umask
// beside it, for the engine to apply unless the parent has a default ACL.
func createCtx(h *fuse.InHeader, umask uint32) context.Context {
	c := meta.Cred{Uid: h.Uid, Gid: h.Gid, Trusted: true, Umask: uint16(umask & 0o777)}
	return meta.WithCred(context.Background(), c)
}

func (fs *FS) status(op string, err error) fuse.Status { return fs.errs.status(op, err) }

// fillAttr converts engine attributes to the kernel's.
func fillAttr(ino meta.Ino, a meta.Attr, out *fuse.Attr) {
	out.Ino = uint64(ino)
	out.Size = a.Length
	out.Blocks = (blocksOf(a) + 511) / 512
	out.Atime, out.Atimensec = split(a.Atime)
	out.Mtime, out.Mtimensec = split(a.Mtime)
	out.Ctime, out.Ctimensec = split(a.Ctime)
	out.Mode = a.FullMode()
	out.Nlink = a.Nlink
	out.Uid, out.Gid = a.Uid, a.Gid
	out.Rdev = a.Rdev
	out.Blksize = 1 << 16
}

// blocksOf is the bytes st_blocks counts: a regular file's allocated data
// (never more than its length), other inodes' length.
func blocksOf(a meta.Attr) uint64 {
	if a.Type == meta.TypeFile {
		return min(a.Alloc, a.Length)
	}
	return a.Length
}

// split turns nanoseconds into the kernel's seconds and nanoseconds;
// times before 1970 have negative seconds, sent as two's complement.
func split(ns int64) (uint64, uint32) {
	sec, nsec := ns/1e9, ns%1e9
	if nsec < 0 {
		sec, nsec = sec-1, nsec+1e9
	}
	return uint64(sec), uint32(nsec)
}

// fillEntry fills the reply of an op that made the entry (a create, a
// mkdir, ...) with the cache timeouts, and records it in the kernel's
// lookup counts (kattrs.made).
func (fs *FS) fillEntry(e meta.Entry, out *fuse.EntryOut) {
	fs.fillEntryOut(e, out)
	fs.kattrs.made(out)
}

// fillEntryRead fills a lookup or readdirplus reply with attributes read
// at read, before the request: the timeouts are shortened by their age,
// so that nothing stays cached longer after its engine read than a fresh
// reply would. It records the entry in the kernel's lookup counts
// (kattrs.entered).
func (fs *FS) fillEntryRead(e meta.Entry, read time.Time, out *fuse.EntryOut) {
	fs.fillEntryOut(e, out)
	age := time.Since(read)
	out.SetEntryTimeout(max(fs.opts.EntryTimeout-age, 0))
	out.SetAttrTimeout(max(fs.opts.AttrTimeout-age, 0))
	fs.kattrs.entered(out)
}

// fillEntryOut fills an entry reply with the cache timeouts.
func (fs *FS) fillEntryOut(e meta.Entry, out *fuse.EntryOut) {
	out.NodeId = uint64(e.Ino)
	out.Generation = 1
	out.SetEntryTimeout(fs.opts.EntryTimeout)
	out.SetAttrTimeout(fs.opts.AttrTimeout)
	fillAttr(e.Ino, e.Attr, &out.Attr)
}

// listingTTL is how long after its read a listing may answer the kernel:
// the shorter cache timeout (0 with --strict).
func (fs *FS) listingTTL() time.Duration { return min(fs.opts.AttrTimeout, fs.opts.EntryTimeout) }
