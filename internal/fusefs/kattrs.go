package fusefs

import (
	"sync"
	"sync/atomic"

	"github.com/hanwen/go-fuse/v2/fuse"

	"shoal/internal/meta"
)

// Which attributes does the kernel hold?
//
// An open that may see another mount's changes (no KEEP_CACHE) drops the
// kernel's cached attributes (forgetAttr), or a read would stop at a size
// the kernel cached before the open. That costs a GETATTR round trip on
// the first read past the cached size, i.e. the first read of a small
// file: one request in six of an open-read-close of a file not in the
// kernel's cache. kernelAttrs knows when the drop is needless: when the
// attributes the kernel holds are, for certain, the ones the open read
// from the engine.
//
// That is certain only from replies the kernel takes unconditionally and
// no reply with other attributes since:
//
//   - CREATE, MKNOD, MKDIR, SYMLINK and LINK replies: the kernel sets the
//     attributes they carry whatever it held (fuse_iget with attribute
//     version 0), and drops any reply to an earlier request;
//   - an entry (LOOKUP, READDIRPLUS) for a node id the kernel holds no
//     inode of: it makes a new inode with those attributes. It holds none
//     when every lookup count handed to it was given back (FORGET): entry
//     replies add one, FORGET takes its count off. Over-counting (a reply
//     the kernel never saw) only costs a drop; under-counting would not,
//     so a server that took over a connection (counts unknown) and a table
//     grown past its bound switch the whole scheme off.
//
// Any other reply (GETATTR, SETATTR, an entry for an inode the kernel
// holds) may be taken or dropped by the kernel (it drops replies to
// requests sent before the last change it saw), so one carrying other
// attributes ends the certainty; one carrying the same changes nothing.
// What the kernel changes itself (a write's size, a truncate) it marks
// stale, and asks for again. The attributes compared are the size and the
// change and modification times (ctime moves with every change).
type kernelAttrs struct {
	off    atomic.Bool
	shards [kattrShards]kattrShard
}

const (
	kattrShards = 16
	// kattrMax bounds the node ids tracked per shard (the kernel's
	// inode cache can be larger: then the scheme goes off).
	kattrMax = 1 << 16
)

type kattrShard struct {
	mu sync.Mutex
	m  map[uint64]kattr
}

// kattr is what is known of one node id in the kernel.
type kattr struct {
	lookups uint64  // lookup count handed to the kernel and not forgotten
	sure    bool    // the kernel holds at (and nothing else)
	at      attrKey // the attributes the kernel holds, if sure
}

type attrKey struct {
	size, mtime, ctime   uint64
	mtimensec, ctimensec uint32
}

func keyOf(a *fuse.Attr) attrKey {
	return attrKey{a.Size, a.Mtime, a.Ctime, a.Mtimensec, a.Ctimensec}
}

func (k *kernelAttrs) shard(ino uint64) *kattrShard { return &k.shards[ino%kattrShards] }

// record returns ino's record, locked, made if add is set; nil (and
// nothing locked) if the scheme is off or ino is not tracked. The root is
// never tracked: the kernel holds it without a lookup.
func (k *kernelAttrs) record(ino uint64, add bool) (*kattrShard, kattr, bool) {
	if ino == 0 || ino == fuse.FUSE_ROOT_ID || k.off.Load() {
		return nil, kattr{}, false
	}
	s := k.shard(ino)
	s.mu.Lock()
	e, ok := s.m[ino]
	if !ok {
		if !add || len(s.m) >= kattrMax {
			if add {
				k.stop()
			}
			s.mu.Unlock()
			return nil, kattr{}, false
		}
		if s.m == nil {
			s.m = map[uint64]kattr{}
		}
	}
	return s, e, true
}

// made records a reply the kernel takes whatever it held: CREATE, MKNOD,
// MKDIR, SYMLINK, LINK.
func (k *kernelAttrs) made(out *fuse.EntryOut) {
	s, e, ok := k.record(out.NodeId, true)
	if !ok {
		return
	}
	e.lookups++
	e.sure, e.at = true, keyOf(&out.Attr)
	s.m[out.NodeId] = e
	s.mu.Unlock()
}

// entered records an entry reply (LOOKUP, READDIRPLUS): certain if the
// kernel had no inode for it, else as told.
func (k *kernelAttrs) entered(out *fuse.EntryOut) {
	s, e, ok := k.record(out.NodeId, true)
	if !ok {
		return
	}
	if e.lookups == 0 {
		e.sure, e.at = true, keyOf(&out.Attr)
	} else {
		e.told(&out.Attr)
	}
	e.lookups++
	s.m[out.NodeId] = e
	s.mu.Unlock()
}

// told records a reply the kernel may take or drop (GETATTR, SETATTR).
func (k *kernelAttrs) told(ino uint64, a *fuse.Attr) {
	s, e, ok := k.record(ino, false)
	if !ok {
		return
	}
	if e.sure {
		e.told(a)
		s.m[ino] = e
	}
	s.mu.Unlock()
}

func (e *kattr) told(a *fuse.Attr) {
	if e.sure && e.at != keyOf(a) {
		e.sure = false
	}
}

// forget takes n lookups of ino off; at none the kernel has no inode.
func (k *kernelAttrs) forget(ino, n uint64) {
	if k.off.Load() {
		return
	}
	s := k.shard(ino)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[ino]
	if !ok {
		return
	}
	if e.lookups <= n {
		delete(s.m, ino)
		return
	}
	e.lookups -= n
	s.m[ino] = e
}

// holds reports whether the kernel certainly holds a as ino's attributes.
func (k *kernelAttrs) holds(ino meta.Ino, a meta.Attr) bool {
	if k.off.Load() {
		return false
	}
	var fa fuse.Attr
	fillAttr(ino, a, &fa)
	s := k.shard(uint64(ino))
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[uint64(ino)]
	return ok && e.sure && e.at == keyOf(&fa)
}

// stop switches the scheme off for good: every open drops the kernel's
// attributes, as without it. Called with one shard's lock held, or none.
func (k *kernelAttrs) stop() {
	k.off.Store(true)
}
