package fusefs

import (
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"

	"shoal/internal/meta"
)

// TestKernelAttrs walks the bookkeeping of kattrs.go: certainty comes from
// a create or the entry that makes the kernel's inode, and goes with any
// reply carrying other attributes, with a lookup for an inode the kernel
// still holds, or with a takeover.
func TestKernelAttrs(t *testing.T) {
	var k kernelAttrs
	a := meta.Attr{Type: meta.TypeFile, Length: 10, Mtime: 5e9, Ctime: 6e9}
	b := a
	b.Length, b.Ctime = 20, 7e9
	entry := func(ino meta.Ino, at meta.Attr) *fuse.EntryOut {
		out := &fuse.EntryOut{NodeId: uint64(ino)}
		fillAttr(ino, at, &out.Attr)
		return out
	}
	attr := func(at meta.Attr) *fuse.Attr {
		var out fuse.Attr
		fillAttr(7, at, &out)
		return &out
	}
	if k.holds(7, a) {
		t.Fatal("an inode never handed to the kernel is held")
	}
	k.entered(entry(7, a)) // the kernel makes the inode: certain
	if !k.holds(7, a) || k.holds(7, b) {
		t.Fatal("after the first lookup: want a held, b not")
	}
	k.told(7, attr(a)) // same attributes: still certain
	if !k.holds(7, a) {
		t.Fatal("a GETATTR with the same attributes lost the certainty")
	}
	k.entered(entry(7, b)) // a second lookup the kernel may drop
	if k.holds(7, a) || k.holds(7, b) {
		t.Fatal("after a lookup with other attributes of a held inode: want nothing certain")
	}
	k.forget(7, 1)
	if k.holds(7, a) || k.holds(7, b) {
		t.Fatal("one lookup of two forgotten: want nothing certain")
	}
	k.forget(7, 1) // the kernel dropped its inode
	k.entered(entry(7, b))
	if !k.holds(7, b) {
		t.Fatal("lookup after every lookup was forgotten: want b held")
	}
	k.told(7, attr(a))
	if k.holds(7, a) || k.holds(7, b) {
		t.Fatal("a GETATTR with other attributes: want nothing certain")
	}
	k.made(entry(7, a)) // a create's reply is taken whatever the kernel held
	if !k.holds(7, a) {
		t.Fatal("after a create: want a held")
	}
	k.entered(entry(fuse.FUSE_ROOT_ID, a))
	if k.holds(fuse.FUSE_ROOT_ID, a) {
		t.Fatal("the root, which the kernel holds without a lookup, is held for certain")
	}
	k.stop() // a successor: the counts are the old server's
	if k.holds(7, a) {
		t.Fatal("after stop: want nothing certain")
	}
}
