package fusefs

import (
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"shoal/internal/meta"
	"shoal/internal/vfs"
)

// OpenDir implements fuse.RawFileSystem.
func (fs *FS) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	defer fs.enter()()
	fh, err := fs.vfs.Opendir(ctx(&in.InHeader), meta.Ino(in.NodeId))
	if err != nil {
		return fs.status("opendir", err)
	}
	out.Fh = uint64(fh)
	return fuse.OK
}

// ReadDir implements fuse.RawFileSystem.
func (fs *FS) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	defer fs.enter()()
	err := fs.vfs.Readdir(ctx(&in.InHeader), vfs.Fh(in.Fh), in.Offset, 0, fs.listingTTL()/2, func(e meta.DirEntry, next uint64, _ time.Time) bool {
		return out.AddDirEntry(fuse.DirEntry{Name: e.Name, Ino: uint64(e.Ino), Mode: e.Type.ModeBits(), Off: next})
	})
	return fs.status("readdir", err)
}

// plusEntrySize is about what one readdirplus entry takes in the kernel's
// buffer: a fuse_entry_out (128 bytes), a dirent header (24) and a short
// name. It sizes the engine reads to the request.
const plusEntrySize = 128 + 24 + 16

// ReadDirPlus implements fuse.RawFileSystem: entries come with their
// attributes, so `ls -l` and stat-every-entry need no further lookups.
// The kernel asks for it for the first page of a listing and for the
// pages after names of it were looked up (READDIRPLUS_AUTO, see
// mountOptions), and caches the names and attributes for the entry and
// attribute timeouts.
// Attributes read for an earlier request may answer this one (see
// vfs.FS.Readdir), for at most half the shorter timeout, and each entry's
// timeouts are shortened by its attributes' age: nothing stays cached
// longer after its engine read than a fresh reply would.
func (fs *FS) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	defer fs.enter()()
	n := int(in.Size)/plusEntrySize + 1
	err := fs.vfs.Readdir(ctx(&in.InHeader), vfs.Fh(in.Fh), in.Offset, n, fs.listingTTL()/2, func(e meta.DirEntry, next uint64, read time.Time) bool {
		eo := out.AddDirLookupEntry(fuse.DirEntry{Name: e.Name, Ino: uint64(e.Ino), Mode: e.Type.ModeBits(), Off: next})
		if eo == nil {
			return false
		}
		if e.Attr != nil && e.Name != "." && e.Name != ".." {
			fs.fillEntryRead(meta.Entry{Ino: e.Ino, Attr: *e.Attr}, read, eo)
		}
		return true
	})
	return fs.status("readdirplus", err)
}

// ReleaseDir implements fuse.RawFileSystem.
func (fs *FS) ReleaseDir(in *fuse.ReleaseIn) {
	defer fs.enter()()
	fs.vfs.Releasedir(vfs.Fh(in.Fh))
}

// FsyncDir implements fuse.RawFileSystem: directory changes are committed
// by the engine as they happen.
func (fs *FS) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status { return fuse.OK }
