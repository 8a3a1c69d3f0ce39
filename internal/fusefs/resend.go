package fusefs

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
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
// EEXIST, an unlink or rename with ENOENT, an open would leave a handle
// the kernel never releases, an O_APPEND write would be appended twice
// (the successor already replayed it). So before an op that changes
// something answers, its reply goes to the journal under the request's
// id: an open's and an O_APPEND write's in the record they already write
// (vfs.WithRequest), a create, mknod, mkdir, symlink or link's entry and
// an unlink, rmdir, rename, setxattr or removexattr's success in a reply
// record (replied). A successor loads them (AdoptReplies), and a resent
// request found there is answered from them without running: the entry,
// success, the adopted handle, the byte count.
//
// Failures are not recorded: an op that failed changed nothing, and
// running it again answers as well. What remains is the moment between
// an op's commit in the engine and its record: a crash there (a few
// microseconds: one write to the page cache) runs the op again. The other ops are idempotent, and run again: a setattr
// sets the same values (a truncate the same size), a positional write
// writes the same bytes at the same place, an owner takes its lock again,
// a flush or fsync commits what is there. An opendir whose reply was lost
// opens a second directory handle: the first stays in memory, unseen,
// until the mount ends.

// uniqueResend is FUSE_UNIQUE_RESEND (include/uapi/linux/fuse.h, Linux
// 6.9), the bit the kernel sets in the unique id of a resent request;
// go-fuse v2.12 has no name for it.
const uniqueResend = 1 << 63

// requestID is the kernel's id of the request h, without the resend bit.
func requestID(h *fuse.InHeader) uint64 { return h.Unique &^ uniqueResend }

// requestCtx is c for an op whose journal records carry h's request id
// (opens, O_APPEND writes); without a journal, c.
func (fs *FS) requestCtx(c context.Context, h *fuse.InHeader) context.Context {
	if fs.replies.journal == nil {
		return c
	}
	return vfs.WithRequest(c, requestID(h))
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

// resent returns the reply recorded for h if the kernel resends it.
func (c *replyCache) resent(h *fuse.InHeader) (journal.Reply, bool) {
	if h.Unique&uniqueResend == 0 || c.replies == nil {
		return journal.Reply{}, false
	}
	r, ok := c.replies[requestID(h)]
	c.note(h, ok)
	return r, ok
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
	if c.journal != nil {
		if err := c.journal.Reply(requestID(h), data); err != nil {
			c.logged.Do(func() {
				c.log.Error("the mount's journal cannot record replies; a request resent after a crash of this server may run twice", "err", err)
			})
		}
	}
	c.kill.fire(op)
}

// replayedEntry fills out with the entry recorded for h if the kernel
// resends it.
func (fs *FS) replayedEntry(h *fuse.InHeader, out *fuse.EntryOut) bool {
	r, ok := fs.replies.resent(h)
	if !ok || len(r.Data) != int(unsafe.Sizeof(*out)) {
		return false
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(out)), unsafe.Sizeof(*out)), r.Data)
	return true
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
		return fs.status(opNames[op], err)
	}
	fs.fillEntry(e, out)
	fs.replied(op, h, entryBytes(out))
	return fuse.OK
}

// done answers an op that replies with a status only, a success recorded
// for a resend.
func (fs *FS) done(op int, h *fuse.InHeader, err error) fuse.Status {
	st := fs.status(opNames[op], err)
	if st == fuse.OK {
		fs.replied(op, h, nil)
	}
	return st
}

// KillBeforeReplyEnv names a test hook: set to OP:PATH (OP as OpNames
// has it: mkdir, create, open, write...), a server kills itself with
// SIGKILL the first time an OP request succeeds, after its reply is
// journaled and before it is written to the kernel, and creates PATH to
// say so (so that its successors, which inherit the setting, do not).
// Tests use it to crash a server between an operation and its reply. For
// tests only; not a user setting.
const KillBeforeReplyEnv = "SHOAL_TEST_KILL_BEFORE_REPLY"

// killHook is Options.KillBeforeReply parsed.
type killHook struct{ op, marker string }

func parseKillHook(s string) killHook {
	op, marker, ok := strings.Cut(s, ":")
	if !ok || marker == "" {
		return killHook{}
	}
	return killHook{op, marker}
}

// fire kills the process if op is the hook's and it has not fired yet.
func (k killHook) fire(op int) {
	if k.op == "" || k.op != opNames[op] {
		return
	}
	f, err := os.OpenFile(k.marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return // fired before, by this process or one it succeeded
	}
	_ = f.Close()
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
}
