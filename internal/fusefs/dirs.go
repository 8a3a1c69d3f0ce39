package fusefs

import (
	"github.com/hanwen/go-fuse/v2/fuse"

	"shoal/internal/meta"
	"shoal/internal/vfs"
)

// OpenDir implements fuse.RawFileSystem.
func (fs *FS) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	fh, err := fs.vfs.Opendir(ctx(&in.InHeader), meta.Ino(in.NodeId))
	if err != nil {
		return fs.status("opendir", err)
	}
	out.Fh = uint64(fh)
	return fuse.OK
}

// ReadDir implements fuse.RawFileSystem.
func (fs *FS) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	err := fs.vfs.Readdir(ctx(&in.InHeader), vfs.Fh(in.Fh), in.Offset, 0, func(e meta.DirEntry, next uint64) bool {
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
// The kernel asks for it with the first page of a listing and while the
// listed names are being looked up (READDIRPLUS_AUTO, see Mount).
func (fs *FS) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	n := int(in.Size)/plusEntrySize + 1
	err := fs.vfs.Readdir(ctx(&in.InHeader), vfs.Fh(in.Fh), in.Offset, n, func(e meta.DirEntry, next uint64) bool {
		eo := out.AddDirLookupEntry(fuse.DirEntry{Name: e.Name, Ino: uint64(e.Ino), Mode: e.Type.ModeBits(), Off: next})
		if eo == nil {
			return false
		}
		if e.Attr != nil && e.Name != "." && e.Name != ".." {
			fs.fillEntry(meta.Entry{Ino: e.Ino, Attr: *e.Attr}, eo)
		}
		return true
	})
	return fs.status("readdirplus", err)
}

// ReleaseDir implements fuse.RawFileSystem.
func (fs *FS) ReleaseDir(in *fuse.ReleaseIn) { fs.vfs.Releasedir(vfs.Fh(in.Fh)) }

// FsyncDir implements fuse.RawFileSystem: directory changes are committed
// by the engine as they happen.
func (fs *FS) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status { return fuse.OK }
