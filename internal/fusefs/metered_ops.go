package fusefs

import (
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// The timed operations of metered, one per op number (metered.go).

// Lookup counts a missing name as a failure: with a negative timeout FS
// answers it with a negative entry (node id 0, status OK) for the kernel
// to cache, but the process that asked gets ENOENT.
func (m *metered) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	t := time.Now()
	st := m.fs.Lookup(cancel, h, name, out)
	m.obs.Op(opLookup, time.Since(t), st != fuse.OK || out.NodeId == 0)
	return st
}

func (m *metered) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	t := time.Now()
	return m.done(opGetattr, t, m.fs.GetAttr(cancel, in, out))
}

func (m *metered) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	t := time.Now()
	return m.done(opSetattr, t, m.fs.SetAttr(cancel, in, out))
}

func (m *metered) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	t := time.Now()
	return m.done(opMknod, t, m.fs.Mknod(cancel, in, name, out))
}

func (m *metered) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	t := time.Now()
	return m.done(opMkdir, t, m.fs.Mkdir(cancel, in, name, out))
}

func (m *metered) Symlink(cancel <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	t := time.Now()
	return m.done(opSymlink, t, m.fs.Symlink(cancel, h, target, name, out))
}

func (m *metered) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	t := time.Now()
	return m.done(opLink, t, m.fs.Link(cancel, in, name, out))
}

func (m *metered) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	t := time.Now()
	b, st := m.fs.Readlink(cancel, h)
	return b, m.done(opReadlink, t, st)
}

func (m *metered) Unlink(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	t := time.Now()
	return m.done(opUnlink, t, m.fs.Unlink(cancel, h, name))
}

func (m *metered) Rmdir(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	t := time.Now()
	return m.done(opRmdir, t, m.fs.Rmdir(cancel, h, name))
}

func (m *metered) Rename(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	t := time.Now()
	return m.done(opRename, t, m.fs.Rename(cancel, in, oldName, newName))
}

func (m *metered) Access(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	t := time.Now()
	return m.done(opAccess, t, m.fs.Access(cancel, in))
}

func (m *metered) StatFs(cancel <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	t := time.Now()
	return m.done(opStatfs, t, m.fs.StatFs(cancel, h, out))
}

func (m *metered) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	t := time.Now()
	return m.done(opCreate, t, m.fs.Create(cancel, in, name, out))
}

func (m *metered) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	t := time.Now()
	return m.done(opOpen, t, m.fs.Open(cancel, in, out))
}

func (m *metered) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	t := time.Now()
	res, st := m.fs.Read(cancel, in, buf)
	if st == fuse.OK && res != nil {
		m.obs.Read(res.Size())
	}
	return res, m.done(opRead, t, st)
}

func (m *metered) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	t := time.Now()
	n, st := m.fs.Write(cancel, in, data)
	if st == fuse.OK {
		m.obs.Written(int(n))
	}
	return n, m.done(opWrite, t, st)
}

func (m *metered) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	t := time.Now()
	return m.done(opFlush, t, m.fs.Flush(cancel, in))
}

func (m *metered) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	t := time.Now()
	return m.done(opFsync, t, m.fs.Fsync(cancel, in))
}

func (m *metered) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	t := time.Now()
	m.fs.Release(cancel, in)
	m.obs.Op(opRelease, time.Since(t), false)
}

func (m *metered) Fallocate(cancel <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	t := time.Now()
	return m.done(opFallocate, t, m.fs.Fallocate(cancel, in))
}

func (m *metered) CopyFileRange(cancel <-chan struct{}, in *fuse.CopyFileRangeIn) (uint32, fuse.Status) {
	t := time.Now()
	n, st := m.fs.CopyFileRange(cancel, in)
	return n, m.done(opCopyFileRange, t, st)
}

func (m *metered) Lseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	t := time.Now()
	return m.done(opLseek, t, m.fs.Lseek(cancel, in, out))
}

func (m *metered) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	t := time.Now()
	return m.done(opOpendir, t, m.fs.OpenDir(cancel, in, out))
}

func (m *metered) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	t := time.Now()
	return m.done(opReaddir, t, m.fs.ReadDir(cancel, in, out))
}

func (m *metered) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	t := time.Now()
	return m.done(opReaddirplus, t, m.fs.ReadDirPlus(cancel, in, out))
}

func (m *metered) ReleaseDir(in *fuse.ReleaseIn) {
	t := time.Now()
	m.fs.ReleaseDir(in)
	m.obs.Op(opReleasedir, time.Since(t), false)
}

func (m *metered) GetXAttr(cancel <-chan struct{}, h *fuse.InHeader, name string, dest []byte) (uint32, fuse.Status) {
	t := time.Now()
	n, st := m.fs.GetXAttr(cancel, h, name, dest)
	return n, m.done(opGetxattr, t, st)
}

func (m *metered) ListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	t := time.Now()
	n, st := m.fs.ListXAttr(cancel, h, dest)
	return n, m.done(opListxattr, t, st)
}

func (m *metered) SetXAttr(cancel <-chan struct{}, in *fuse.SetXAttrIn, name string, value []byte) fuse.Status {
	t := time.Now()
	return m.done(opSetxattr, t, m.fs.SetXAttr(cancel, in, name, value))
}

func (m *metered) RemoveXAttr(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	t := time.Now()
	return m.done(opRemovexattr, t, m.fs.RemoveXAttr(cancel, h, name))
}

func (m *metered) GetLk(cancel <-chan struct{}, in *fuse.LkIn, out *fuse.LkOut) fuse.Status {
	t := time.Now()
	return m.done(opGetlk, t, m.fs.GetLk(cancel, in, out))
}

func (m *metered) SetLk(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	t := time.Now()
	return m.done(opSetlk, t, m.fs.SetLk(cancel, in))
}

func (m *metered) SetLkw(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	t := time.Now()
	return m.done(opSetlkw, t, m.fs.SetLkw(cancel, in))
}
