package fusefs

import (
	"bytes"
	"context"
	"errors"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"shoal/internal/meta"
)

// Resent requests that may have committed: the intent is journaled and
// the outcome is not (resend.go). The volume tells, as far as it can:
//
//   - a create, mknod, mkdir or symlink committed if its name holds the
//     inode number its intent reserved, a link if its name holds the
//     inode it links, a rename or an exchange if the new name holds the
//     inode its intent read at the old name; else it runs;
//   - a setxattr with XATTR_CREATE or a removexattr records its intent
//     only once it found the xattr unset or set (vfs, intendXattr), so
//     one that runs and finds it set (holding the request's value) or
//     gone committed, unless another mount changed it in between;
//   - an unlink or rmdir that runs and finds its name gone is answered
//     as a success: what it was asked to make true is true, though the
//     name may have gone another way (another mount removed it between
//     the kernel's lookup and the request, and the dead server died
//     before recording the ENOENT).

// committedEntry returns the entry a resent request made at parent/name,
// if its intent is journaled without an outcome and the name holds the
// inode it made or moved there: the one its intent named, or for a link
// (linked not 0) the inode it links. A name that is missing or holds
// another inode says the request did not commit (it is to run); any other
// failure to read it is returned, since running the request blind could
// undo it (an exchange) or fail it wrongly (EEXIST for a create).
func (fs *FS) committedEntry(c context.Context, h *fuse.InHeader, parent meta.Ino, name string, linked meta.Ino) (meta.Entry, bool, error) {
	ino, ok := fs.replies.begun(h)
	if linked != 0 {
		ino = linked
	}
	if !ok || ino == 0 {
		return meta.Entry{}, false, nil
	}
	e, err := fs.vfs.Lookup(c, parent, name)
	if errors.Is(err, syscall.ENOENT) || (err == nil && e.Ino != ino) {
		return meta.Entry{}, false, nil
	}
	if err != nil {
		return meta.Entry{}, false, err
	}
	fs.replies.noteCommitted(h)
	return e, true, nil
}

// committedXattr returns nil for the second run of a resent setxattr
// with XATTR_CREATE whose intent is journaled without an outcome, when
// it failed with EEXIST and the xattr holds the request's value: the
// first run set it. Otherwise err.
func (fs *FS) committedXattr(c context.Context, h *fuse.InHeader, name string, value []byte, err error) error {
	if !errors.Is(err, syscall.EEXIST) {
		return err
	}
	if _, ok := fs.replies.begun(h); !ok {
		return err
	}
	if v, gerr := fs.vfs.Getxattr(c, meta.Ino(h.NodeId), name); gerr != nil || !bytes.Equal(v, value) {
		return err
	}
	fs.replies.noteCommitted(h)
	return nil
}

// committedGone returns nil for the second run of a resent unlink, rmdir
// or removexattr whose intent is journaled without an outcome, when it
// failed with gone (ENOENT, ENODATA): what it removes is gone. Otherwise
// err.
func (fs *FS) committedGone(h *fuse.InHeader, err error, gone syscall.Errno) error {
	if !errors.Is(err, gone) {
		return err
	}
	if _, ok := fs.replies.begun(h); !ok {
		return err
	}
	fs.replies.noteCommitted(h)
	return nil
}

// noteCommitted logs a resent request found committed (rare: after a
// crash, at most the requests the dead server had in hand).
func (c *replyCache) noteCommitted(h *fuse.InHeader) {
	c.log.Info("takeover: a resent request had committed when the previous server died (its intent is journaled, its reply is not); answered as committed",
		"request", requestID(h), "op", h.Opcode)
}
