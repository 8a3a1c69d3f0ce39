package fusefs

import (
	"io"
	"log/slog"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"

	"shoal/internal/journal"
)

// TestReplayedOnlyWhenResent: a reply the journal kept answers a request
// only when the kernel marks it resent (FUSE_UNIQUE_RESEND), and gives
// back the entry byte for byte, or the failure; an intent alone is no
// reply.
func TestReplayedOnlyWhenResent(t *testing.T) {
	var orig fuse.EntryOut
	orig.NodeId, orig.Generation, orig.Attr.Size, orig.Attr.Mode = 42, 1, 7, 0o40755
	orig.SetEntryTimeout(3e9)
	fs := &FS{replies: replyCache{log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	fs.AdoptReplies(journal.State{
		Replies: map[uint64]journal.Reply{
			10: {Data: entryBytes(&orig)}, 12: {Written: 5}, 18: {Data: failureBytes(fuse.Status(syscall.EEXIST))},
			20: {Intent: true, Ino: 99},
		},
		Handles: map[uint64]journal.Handle{3: {Ino: 42, Request: 14, DirectIO: true}},
	})
	var out fuse.EntryOut
	if _, ok := fs.replayedEntry(&fuse.InHeader{Unique: 10}, &out); ok {
		t.Fatal("a request not marked resent was answered from the journal")
	}
	if st, ok := fs.replayedEntry(&fuse.InHeader{Unique: 10 | uniqueResend}, &out); !ok || st != fuse.OK || out != orig {
		t.Fatalf("resent entry: %+v, want %+v", out, orig)
	}
	if st, ok := fs.replayedEntry(&fuse.InHeader{Unique: 18 | uniqueResend}, &out); !ok || st != fuse.Status(syscall.EEXIST) {
		t.Fatalf("resent failure: %v %v", st, ok)
	}
	if r, ok := fs.replies.resent(&fuse.InHeader{Unique: 12 | uniqueResend}); !ok || r.Written != 5 {
		t.Fatalf("resent append: %+v %v", r, ok)
	}
	if o, ok := fs.replies.reopened(&fuse.InHeader{Unique: 14 | uniqueResend}); !ok || o.result().Fh != 3 || !o.result().DirectIO {
		t.Fatalf("resent open: %+v %v", o, ok)
	}
	if _, ok := fs.replies.resent(&fuse.InHeader{Unique: 16 | uniqueResend}); ok {
		t.Fatal("a resent request the journal does not hold was answered")
	}
	if _, ok := fs.replayedStatus(&fuse.InHeader{Unique: 20 | uniqueResend}); ok {
		t.Fatal("a resent request with only an intent was answered as if it had a reply")
	}
	if ino, ok := fs.replies.begun(&fuse.InHeader{Unique: 20 | uniqueResend}); !ok || ino != 99 {
		t.Fatalf("intent of resent request 20: %v %v", ino, ok)
	}
	if _, ok := fs.replies.begun(&fuse.InHeader{Unique: 20}); ok {
		t.Fatal("an intent was found for a request not marked resent")
	}
}

func TestParseKillHook(t *testing.T) {
	for in, want := range map[string]killHook{
		"":                        {},
		"mkdir:/tmp/marker":       {},
		"later:mkdir:/tmp/marker": {},
		"reply:mkdir:/tmp/marker": {"reply", "mkdir", "/tmp/marker"},
		"commit:create:/tmp/m:x":  {"commit", "create", "/tmp/m:x"},
		"intent:unlink:/tmp/m":    {"intent", "unlink", "/tmp/m"},
	} {
		if got := parseKillHook(in); got != want {
			t.Errorf("parseKillHook(%q) = %+v, want %+v", in, got, want)
		}
	}
}
