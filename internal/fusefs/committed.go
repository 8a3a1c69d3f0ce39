package fusefs

import (
	"context"
	"errors"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"shoal/internal/meta"
)

// Resent requests that may have committed: the intent is journaled and
// the outcome is not (resend.go). The volume tells.

// committedEntry returns the entry a resent create-like request made, if
// its intent is journaled without an outcome and parent/name holds the
// inode it made: the number its intent reserved, or for a link (linked
// not 0) the inode it links.
func (fs *FS) committedEntry(c context.Context, h *fuse.InHeader, parent meta.Ino, name string, linked meta.Ino) (meta.Entry, bool) {
	ino, ok := fs.replies.begun(h)
	if linked != 0 {
		ino = linked
	}
	if !ok || ino == 0 {
		return meta.Entry{}, false
	}
	e, err := fs.vfs.Lookup(c, parent, name)
	if err != nil || e.Ino != ino {
		return meta.Entry{}, false
	}
	fs.replies.noteCommitted(h)
	return e, true
}

// committedExchange reports whether a resent RENAME_EXCHANGE committed:
// its intent is journaled without an outcome and the old name no longer
// holds the inode the intent named.
func (fs *FS) committedExchange(c context.Context, h *fuse.InHeader, parent meta.Ino, name string) bool {
	ino, ok := fs.replies.begun(h)
	if !ok || ino == 0 {
		return false
	}
	if e, err := fs.vfs.Lookup(c, parent, name); err == nil && e.Ino == ino {
		return false
	}
	fs.replies.noteCommitted(h)
	return true
}

// committedBefore returns nil for the second run of a resent request
// whose intent is journaled without an outcome, when it failed with the
// error only a committed first run leaves (gone): an unlink, rmdir or
// rename finding its name gone (ENOENT), a setxattr with XATTR_CREATE
// finding the xattr set (EEXIST), a removexattr finding it unset
// (ENODATA). Otherwise err.
func (fs *FS) committedBefore(h *fuse.InHeader, err error, gone syscall.Errno) error {
	if err == nil || !errors.Is(err, gone) {
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
