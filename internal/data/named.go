package data

import (
	"context"
	"sync"
	"time"

	"shoal/internal/meta"
	"shoal/internal/object"
)

// Block names made ahead.
//
// A pack's object (an fsync of a small write uploads one) is block 0 of a
// fresh slice id, and the file store can make such an object's name
// durable before the Put (filestore.Store.Prepare: an empty file, synced
// with its directory), so that the Put only writes and fdatasyncs: one
// device cache flush instead of two, on the path of every fsync(2) of a
// small change.
//
// So a Store given Config.NewID keeps a few slice ids reserved from the
// engine, by class, whose block-0 keys the store beneath the wrappers has
// prepared. A block key names its object's size, so a name prepared for
// one size serves no other; a pack (at most namedMax: for a larger object
// the name is a small part of the cost) therefore takes a name of its
// class, its size rounded up to a multiple of namedStep, and its object
// is padded with zeros to that size (pack.go): the pack's records name
// the padded object (meta.Slice.Size) and no record covers the padding.
// Files of many sizes (a tree of small files written and closed one by
// one) so share 16 classes instead of each needing a name of its own
// size. A pack takes one of its class's ids instead of asking the engine
// for a new one; when the class has none it asks as before and is stored
// unpadded. A class refills in the background once it has had two packs
// within namedMaxAge (a single small write prepares nothing) and holds
// fewer than namedLow ids, and only ids prepared less than namedMaxAge
// ago are used: the file store takes no older object
// (filestore/named.go), which keeps gc's grace rule true; a refill drops
// the older ones of every class. Prepare is told the class, so each
// object gets the space its own class's Puts take.
// Ids taken from the engine and never used are lost, as the ids of a
// crashed writer are (ids are 64-bit and never reused).
//
// The padding costs at most namedStep-1 bytes of zeros a pack (a 4 KiB
// block of the file system at most, since objects are files); a pack of a
// multiple of namedStep (a 4 KiB append) is not padded. Rejected: names
// for one exact size at a time, switched to a new size after a run of
// packs of it (before): files of random sizes never met a
// prepared name and each paid a spare's rename and directory fsync, and
// the commit ran after the Put rather than beside it (gated.go). Measured
// on the 2-core test machine, files of 1-64 KiB created, written and
// closed one by one through a SQLite mount, interleaved with the build
// before: 0.64-0.95 of before at the median per file; shoal bench mass
// create sized 1.52x of before (0.37 against 0.24 of the local disk).
//
// Measured on the 2-core test machine, loaded, interleaved with the build
// before it: the store's Put of a 4 KiB block 0.61-0.72 of the Put over a
// spare at the median (BenchmarkSmallFreshPut in filestore); an fsync(2)
// of a 4 KiB append through a SQLite mount 0.85-0.92 of before, Redis
// 0.90, PostgreSQL 0.88 (the rest is the engine commit, SQLite's WAL
// sync, FUSE).
//
// What is left: Close removes the prepared objects of the ids still in
// the pool; a killed mount leaves them, empty objects under block keys
// that no slice references, which gc collects after its grace like any
// leaked block. The durability order is unchanged: the Put returns once
// the object is durable, and the commit naming it follows.
const (
	namedCount  = 32               // ids prepared at a time, per class
	namedLow    = 8                // a class refills when fewer remain
	namedStep   = 4 << 10          // classes are multiples of this
	namedMax    = 64 << 10         // largest pack that takes a prepared name
	namedMaxAge = 90 * time.Second // below the file store's limit
)

// preparer is a store that can make objects' names durable ahead of
// their Puts (filestore.Store.Prepare).
type preparer interface {
	Prepare(ctx context.Context, keys []string, sizeHint int64) []string
	Unprepare(keys []string)
}

// namedPool is a Store's reserved ids with prepared block-0 keys, by
// class.
type namedPool struct {
	p     preparer // nil: the store cannot prepare
	newID IDFunc   // the engine's, from Config.NewID

	mu      sync.Mutex
	classes map[int]*namedClass // by object size
	stopped bool
}

// namedClass is the pool's ids prepared for one object size.
type namedClass struct {
	ids       []namedID
	uses      int       // packs of this class since uses were last reset
	used      time.Time // the latest of them
	refilling bool
}

type namedID struct {
	id   meta.SliceID
	made time.Time
}

// namedClassOf returns the object size a pack of size bytes takes a
// prepared name of: size rounded up to a multiple of namedStep, or 0
// when the pack is too large for one.
func namedClassOf(size int) int {
	if size <= 0 || size > namedMax {
		return 0
	}
	return (size + namedStep - 1) / namedStep * namedStep
}

// held returns how many prepared ids the pool holds, for tests.
func (n *namedPool) held() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	total := 0
	for _, c := range n.classes {
		total += len(c.ids)
	}
	return total
}

// findPreparer returns the store under objects' wrappers that can
// prepare names, or nil.
func findPreparer(objects object.Store) preparer {
	p, _ := object.Find[preparer](objects)
	return p
}

// takeNamed returns, for a pack of size bytes, a slice id whose block-0
// key is prepared and the size of that object (size padded up to its
// class), or 0 and size; it starts a refill of the class when the class
// runs low.
func (s *Store) takeNamed(size int) (meta.SliceID, int) {
	n := &s.named
	class := namedClassOf(size)
	if n.p == nil || n.newID == nil || class == 0 || class > s.cfg.BlockSize {
		return 0, size
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.classes == nil {
		n.classes = map[int]*namedClass{}
	}
	c := n.classes[class]
	if c == nil {
		c = &namedClass{}
		n.classes[class] = c
	}
	now := time.Now()
	if now.Sub(c.used) >= namedMaxAge {
		c.uses = 0
	}
	c.uses++
	c.used = now
	var id meta.SliceID
	for len(c.ids) > 0 && id == 0 {
		x := c.ids[0]
		c.ids = c.ids[1:]
		if now.Sub(x.made) < namedMaxAge {
			id = x.id
		} else {
			s.dropNamed(class, x.id)
		}
	}
	// Two packs of a class within namedMaxAge prepare names for it; a
	// single small write prepares nothing.
	if !c.refilling && !n.stopped && c.uses >= 2 && len(c.ids) < namedLow {
		c.refilling = true
		if !s.spawn(func() { s.refillNamed(class) }) {
			c.refilling = false
		}
	}
	if id == 0 {
		return 0, size
	}
	return id, class
}

// dropNamed removes the prepared object of an id not to be used, in the
// background. Called with s.named.mu held.
func (s *Store) dropNamed(size int, id meta.SliceID) {
	key := BlockKey(id, 0, size)
	if !s.spawn(func() { s.named.p.Unprepare([]string{key}) }) {
		s.named.p.Unprepare([]string{key})
	}
}

// refillNamed tops class size up with prepared ids, and drops the
// expired ids of every class (a class no longer used keeps its ids
// until then).
func (s *Store) refillNamed(size int) {
	n := &s.named
	n.mu.Lock()
	c := n.classes[size]
	want := namedCount - len(c.ids)
	s.dropExpired()
	n.mu.Unlock()
	var ids []namedID
	for range want {
		id, err := n.newID(s.ctx)
		if err != nil || id == 0 {
			break
		}
		ids = append(ids, namedID{id: id})
	}
	prepared := map[string]bool{}
	for _, k := range n.p.Prepare(s.ctx, namedKeys(ids, size), int64(size)) {
		prepared[k] = true
	}
	now := time.Now()
	ready := ids[:0]
	for _, x := range ids {
		if prepared[BlockKey(x.id, 0, size)] {
			x.made = now
			ready = append(ready, x)
		}
	}
	var old []namedID
	n.mu.Lock()
	if n.stopped {
		old = ready
	} else {
		c.ids = append(c.ids, ready...)
	}
	c.refilling = false
	n.mu.Unlock()
	n.p.Unprepare(namedKeys(old, size))
}

// dropExpired removes, in the background, the ids prepared namedMaxAge
// ago or more. Called with s.named.mu held.
func (s *Store) dropExpired() {
	for size, c := range s.named.classes {
		keep := c.ids[:0]
		for _, x := range c.ids {
			if time.Since(x.made) < namedMaxAge {
				keep = append(keep, x)
			} else {
				s.dropNamed(size, x.id)
			}
		}
		c.ids = keep
	}
}

// stopNamed removes the prepared objects of the ids left in the pool.
// Called by Close once no refill runs.
func (s *Store) stopNamed() {
	n := &s.named
	if n.p == nil {
		return
	}
	n.mu.Lock()
	n.stopped = true
	left := map[int][]namedID{}
	for size, c := range n.classes {
		left[size], c.ids = c.ids, nil
	}
	n.mu.Unlock()
	for size, ids := range left {
		n.p.Unprepare(namedKeys(ids, size))
	}
}

// namedKeys returns the block-0 keys of ids for size-byte blocks.
func namedKeys(ids []namedID, size int) []string {
	keys := make([]string, len(ids))
	for i, x := range ids {
		keys[i] = BlockKey(x.id, 0, size)
	}
	return keys
}
