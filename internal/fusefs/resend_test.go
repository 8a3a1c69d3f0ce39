package fusefs

import (
	"io"
	"log/slog"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"

	"shoal/internal/journal"
)

// TestReplayedOnlyWhenResent: a reply the journal kept answers a request
// only when the kernel marks it resent (FUSE_UNIQUE_RESEND), and gives
// back the entry byte for byte.
func TestReplayedOnlyWhenResent(t *testing.T) {
	var orig fuse.EntryOut
	orig.NodeId, orig.Generation, orig.Attr.Size, orig.Attr.Mode = 42, 1, 7, 0o40755
	orig.SetEntryTimeout(3e9)
	fs := &FS{replies: replyCache{log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	fs.AdoptReplies(journal.State{
		Replies: map[uint64]journal.Reply{10: {Data: entryBytes(&orig)}, 12: {Written: 5}},
		Handles: map[uint64]journal.Handle{3: {Ino: 42, Request: 14, DirectIO: true}},
	})
	var out fuse.EntryOut
	if fs.replayedEntry(&fuse.InHeader{Unique: 10}, &out) {
		t.Fatal("a request not marked resent was answered from the journal")
	}
	if !fs.replayedEntry(&fuse.InHeader{Unique: 10 | uniqueResend}, &out) || out != orig {
		t.Fatalf("resent entry: %+v, want %+v", out, orig)
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
}

func TestParseKillHook(t *testing.T) {
	for in, want := range map[string]killHook{
		"":                  {},
		"mkdir":             {},
		"mkdir:/tmp/marker": {"mkdir", "/tmp/marker"},
	} {
		if got := parseKillHook(in); got != want {
			t.Errorf("parseKillHook(%q) = %+v, want %+v", in, got, want)
		}
	}
}
