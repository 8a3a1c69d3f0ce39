package fusefs

import (
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Observer is told of every request a metered mount answers
// (Options.Ops; metrics.Registry implements it). It must be cheap: it
// runs on every request.
type Observer interface {
	// Op records one request of operation op (an index into OpNames)
	// that took d; failed when it was answered with an error.
	Op(op int, d time.Duration, failed bool)
	Read(n int)    // bytes returned by a read
	Written(n int) // bytes accepted by a write
}

// Operation numbers, the indexes of OpNames.
const (
	opLookup = iota
	opGetattr
	opSetattr
	opMknod
	opMkdir
	opSymlink
	opLink
	opReadlink
	opUnlink
	opRmdir
	opRename
	opAccess
	opStatfs
	opCreate
	opOpen
	opRead
	opWrite
	opFlush
	opFsync
	opRelease
	opFallocate
	opCopyFileRange
	opLseek
	opOpendir
	opReaddir
	opReaddirplus
	opReleasedir
	opGetxattr
	opListxattr
	opSetxattr
	opRemovexattr
	opGetlk
	opSetlk
	opSetlkw
	numOps
)

// opNames names the operations as metrics label them (the syscall names).
var opNames = [numOps]string{
	"lookup", "getattr", "setattr", "mknod", "mkdir", "symlink", "link", "readlink", "unlink", "rmdir",
	"rename", "access", "statfs", "create", "open", "read", "write", "flush", "fsync", "release",
	"fallocate", "copy_file_range", "lseek", "opendir", "readdir", "readdirplus", "releasedir",
	"getxattr", "listxattr", "setxattr", "removexattr", "getlk", "setlk", "setlkw",
}

// OpNames returns the names of the operations a metered mount reports,
// indexed by the op numbers Observer.Op receives.
func OpNames() []string { return append([]string(nil), opNames[:]...) }

// served returns what the FUSE server calls: fs itself, or with
// Options.Ops set, fs behind a wrapper that times every request. Without
// an observer nothing is timed (a mount always has one: opstat's Recorder,
// for the figures it publishes with its heartbeat).
func (fs *FS) served() fuse.RawFileSystem {
	if fs.opts.Ops == nil {
		return fs
	}
	return &metered{RawFileSystem: fs, fs: fs, obs: fs.opts.Ops}
}

// metered times the requests of fs for obs. Operations it does not list
// (forget, interrupts, ...) reach fs through the embedded interface.
type metered struct {
	fuse.RawFileSystem
	fs  *FS
	obs Observer
}

// done reports one request of op that started at t.
func (m *metered) done(op int, t time.Time, st fuse.Status) fuse.Status {
	m.obs.Op(op, time.Since(t), st != fuse.OK)
	return st
}
