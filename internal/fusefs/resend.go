package fusefs

import (
	"context"
	"encoding/binary"
	"log/slog"
	"sync"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"

	"shoal/internal/journal"
	"shoal/internal/meta"
	"shoal/internal/vfs"
)

// Answering resent requests: a reply cache, like NFS's duplicate request
// cache (package journal, replies.go, says what is kept and how long).
//
// After a crash the kernel resends the requests the dead server read but
// never answered, with FUSE_UNIQUE_RESEND set in their unique id. One
// that had happened must not run again: a create or mkdir would fail with
// EEXIST, an unlink or rename with ENOENT, an exchange would swap back,
// an open would leave a handle the kernel never releases, an O_APPEND
// write would be appended twice (the successor already replayed it). So
// before an op that changes something answers, its outcome goes to the
// journal under the request's id: an open's and an O_APPEND write's in
// the record they already write (vfs.WithRequest), a create, mknod,
// mkdir, symlink or link's entry, an unlink, rmdir, rename, setxattr or
// removexattr's success, and the failure of any of these, in a reply
// record (replied, failed). A successor loads them (AdoptReplies), and a
// resent request found there is answered from them without running: the
// entry, the status, the adopted handle, the byte count.
//
// Between commit and record. Those ops first record their intent (package
// vfs, intent.go): a process that died after the engine committed and
// before the outcome's record leaves the intent alone. A resent request
// with only an intent is checked against the volume (committed.go): one
// whose new name holds the inode its intent named committed and is
// answered so; any other runs, and an unlink, rmdir or removexattr that
// then finds its name or xattr gone, or an XATTR_CREATE setxattr that
// finds its value set, had committed and succeeds. A clone (a setxattr of
// vfs.CloneXattr) records no intent. The other ops are idempotent, and
// run again: a setattr sets the same values (a truncate the same size), a
// positional write writes the same bytes at the same place, an owner
// takes its lock again, a flush or fsync commits what is there, an open
// whose handle was not recorded opens one (the engine's open record is
// per inode). An opendir whose reply was lost opens a second directory
// handle: the first stays in memory, unseen, until the mount ends.

// uniqueResend is FUSE_UNIQUE_RESEND (include/uapi/linux/fuse.h, Linux
// 6.9), the bit the kernel sets in the unique id of a resent request;
// go-fuse v2.12 has no name for it.
const uniqueResend = 1 << 63

// requestID is the kernel's id of the request h, without the resend bit.
func requestID(h *fuse.InHeader) uint64 { return h.Unique &^ uniqueResend }

// requestCtx is c for op's request h: with its id, which the vfs puts
// in its journal records (intents, opens, O_APPEND writes), and the test
// hook's stage callback if it is armed for op; without a journal, c.
func (fs *FS) requestCtx(c context.Context, h *fuse.InHeader, op int) context.Context {
	if fs.replies.journal == nil {
		return c
	}
	c = vfs.WithRequest(c, requestID(h))
	if fn := fs.replies.kill.stageHook(op); fn != nil {
		c = vfs.WithStageHook(c, fn)
	}
	return c
}

// replyCache holds the replies a previous server recorded (read-only once
// serving) and records this server's.
type replyCache struct {
	journal *journal.Journal
	replies map[uint64]journal.Reply
	opens   map[uint64]opened
	logged  sync.Once
	log     *slog.Logger
	kill    killHook
}

// opened is a handle a previous server opened for a request.
type opened struct {
	fh uint64
	h  journal.Handle
}

// AdoptReplies takes over the replies a previous server recorded, to
// answer the kernel's resends with them. Call it before serving.
func (fs *FS) AdoptReplies(st journal.State) {
	fs.kattrs.stop() // the kernel's lookup counts are the old server's
	c := &fs.replies
	c.replies = st.Replies
	c.opens = map[uint64]opened{}
	for fh, h := range st.Handles {
		if h.Request != 0 {
			c.opens[h.Request] = opened{fh, h}
		}
	}
}

// resent returns the reply (or failure) recorded for h if the kernel
// resends it.
func (c *replyCache) resent(h *fuse.InHeader) (journal.Reply, bool) {
	if h.Unique&uniqueResend == 0 || c.replies == nil {
		return journal.Reply{}, false
	}
	r, ok := c.replies[requestID(h)]
	if ok && r.Intent {
		return journal.Reply{}, false
	}
	c.note(h, ok)
	return r, ok
}

// begun returns the inode number of the intent recorded for h if the
// kernel resends it and no outcome of it was recorded.
func (c *replyCache) begun(h *fuse.InHeader) (meta.Ino, bool) {
	if h.Unique&uniqueResend == 0 || c.replies == nil {
		return 0, false
	}
	r, ok := c.replies[requestID(h)]
	return meta.Ino(r.Ino), ok && r.Intent
}

// reopened returns the handle opened for h if the kernel resends it.
func (c *replyCache) reopened(h *fuse.InHeader) (opened, bool) {
	if h.Unique&uniqueResend == 0 || c.opens == nil {
		return opened{}, false
	}
	o, ok := c.opens[requestID(h)]
	c.note(h, ok)
	return o, ok
}

// note logs a resent request answered from the journal (rare: after a
// crash, at most the requests the dead server had in hand).
func (c *replyCache) note(h *fuse.InHeader, found bool) {
	if found {
		c.log.Info("takeover: answered a resent request with the reply the previous server journaled; it does not run again",
			"request", requestID(h), "op", h.Opcode)
	}
}

// result is what the open answered.
func (o opened) result() vfs.OpenResult {
	return vfs.OpenResult{Fh: vfs.Fh(o.fh), KeepCache: o.h.KeepCache, DirectIO: o.h.DirectIO}
}

// replied records that op's request h succeeded with reply data (nil:
// no reply but the status), before the reply is written.
func (fs *FS) replied(op int, h *fuse.InHeader, data []byte) {
	c := &fs.replies
	c.record(h, data)
	c.kill.fire(op)
}

// failed records that op's request h failed with st (the intent it may
// have recorded does not stand), before the reply is written, and
// returns st.
func (fs *FS) failed(h *fuse.InHeader, st fuse.Status) fuse.Status {
	fs.replies.record(h, failureBytes(st))
	return st
}

// record journals data as the reply to h.
func (c *replyCache) record(h *fuse.InHeader, data []byte) {
	if c.journal == nil {
		return
	}
	if err := c.journal.Reply(requestID(h), data); err != nil {
		c.logged.Do(func() {
			c.log.Error("the mount's journal cannot record replies; a request resent after a crash of this server may run twice", "err", err)
		})
	}
}

// failureBytes is a failure as the journal keeps it: the errno, 4 bytes
// (an entry is 128, a success status 0).
func failureBytes(st fuse.Status) []byte {
	return binary.LittleEndian.AppendUint32(nil, uint32(st))
}

// recorded is the status a recorded reply answers with.
func recorded(r journal.Reply) fuse.Status {
	if len(r.Data) == 4 {
		return fuse.Status(binary.LittleEndian.Uint32(r.Data))
	}
	return fuse.OK
}

// replayedEntry answers a resent request of an entry with what was
// recorded for it: its failure, or its entry (filling out).
func (fs *FS) replayedEntry(h *fuse.InHeader, out *fuse.EntryOut) (fuse.Status, bool) {
	r, ok := fs.replies.resent(h)
	if !ok {
		return fuse.OK, false
	}
	if st := recorded(r); st != fuse.OK {
		return st, true
	}
	if len(r.Data) != int(unsafe.Sizeof(*out)) {
		return fuse.OK, false
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(out)), unsafe.Sizeof(*out)), r.Data)
	return fuse.OK, true
}

// replayedStatus answers a resent request of a status with what was
// recorded for it.
func (fs *FS) replayedStatus(h *fuse.InHeader) (fuse.Status, bool) {
	r, ok := fs.replies.resent(h)
	return recorded(r), ok
}

// entryBytes is an entry reply as the journal keeps it: the kernel's
// fuse_entry_out, which go-fuse's EntryOut is byte for byte.
func entryBytes(out *fuse.EntryOut) []byte {
	return append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(out)), unsafe.Sizeof(*out))...)
}

// entry answers an op that made an entry: the error, or the entry,
// recorded for a resend.
func (fs *FS) entry(op int, h *fuse.InHeader, e meta.Entry, err error, out *fuse.EntryOut) fuse.Status {
	if err != nil {
		return fs.failed(h, fs.status(opNames[op], err))
	}
	fs.fillEntry(e, out)
	fs.replied(op, h, entryBytes(out))
	return fuse.OK
}

// done answers an op that replies with a status only, recorded for a
// resend.
func (fs *FS) done(op int, h *fuse.InHeader, err error) fuse.Status {
	st := fs.status(opNames[op], err)
	if st != fuse.OK {
		return fs.failed(h, st)
	}
	fs.replied(op, h, nil)
	return st
}
