package fusefs

import (
	"encoding/json"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"shoal/internal/meta"
	"shoal/internal/vfs"
)

// GetXAttr implements fuse.RawFileSystem: with an empty dest it reports
// the size; a too small dest is ERANGE.
func (fs *FS) GetXAttr(cancel <-chan struct{}, h *fuse.InHeader, name string, dest []byte) (uint32, fuse.Status) {
	defer fs.enter()()
	v, err := fs.vfs.Getxattr(ctx(h), meta.Ino(h.NodeId), name)
	if err != nil {
		return 0, fs.status("getxattr", err)
	}
	return copyOut(v, dest)
}

// ListXAttr implements fuse.RawFileSystem.
func (fs *FS) ListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	defer fs.enter()()
	names, err := fs.vfs.Listxattr(ctx(h), meta.Ino(h.NodeId))
	if err != nil {
		return 0, fs.status("listxattr", err)
	}
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte(0)
	}
	return copyOut([]byte(b.String()), dest)
}

func copyOut(v, dest []byte) (uint32, fuse.Status) {
	if len(dest) == 0 {
		return uint32(len(v)), fuse.OK
	}
	if len(dest) < len(v) {
		return uint32(len(v)), fuse.ERANGE
	}
	return uint32(copy(dest, v)), fuse.OK
}

// SetXAttr implements fuse.RawFileSystem. The kernel asks (with
// SETXATTR_EXT) that setting an access ACL clear setgid when the caller is
// not in the file's group, which only it can tell.
func (fs *FS) SetXAttr(cancel <-chan struct{}, in *fuse.SetXAttrIn, name string, value []byte) fuse.Status {
	defer fs.enterChange()()
	defer fs.dirs.changed()
	h := &in.InHeader
	if st, ok := fs.replayedStatus(h); ok {
		return st
	}
	flags := in.Flags
	if in.SetXAttrFlags&fuse.SETXATTR_ACL_KILL_SGID != 0 {
		flags |= meta.XattrACLKillSgid
	}
	c := fs.requestCtx(ctx(h), h, opSetxattr)
	err := fs.vfs.Setxattr(c, meta.Ino(in.NodeId), name, value, flags)
	if flags&meta.XattrCreate != 0 && name != vfs.CloneXattr {
		err = fs.committedXattr(c, h, name, value, err)
	}
	if err == nil && name == vfs.CloneXattr {
		fs.forgetEntry(in.NodeId, value)
	}
	return fs.done(opSetxattr, &in.InHeader, err)
}

// forgetEntry drops a negative entry the kernel may cache for the name a
// clone just created. In the background: the kernel holds the directory's
// lock while it waits for this setxattr, and the notification takes it.
func (fs *FS) forgetEntry(parent uint64, value []byte) {
	var c vfs.CloneControl
	if fs.server == nil || json.Unmarshal(value, &c) != nil {
		return
	}
	go func() { _ = fs.server.EntryNotify(parent, c.Name) }()
}

// RemoveXAttr implements fuse.RawFileSystem.
func (fs *FS) RemoveXAttr(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	defer fs.enterChange()()
	defer fs.dirs.changed()
	if st, ok := fs.replayedStatus(h); ok {
		return st
	}
	err := fs.vfs.Removexattr(fs.requestCtx(ctx(h), h, opRemovexattr), meta.Ino(h.NodeId), name)
	return fs.done(opRemovexattr, h, fs.committedGone(h, err, syscall.ENODATA))
}
