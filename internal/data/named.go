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
// engine, whose block-0 keys of one size (the latest pack's, up to
// namedMax: for a larger object the name is a small part of the cost)
// the store beneath the wrappers has prepared. A pack of that size takes
// one of those ids instead of asking the engine for a new one; any other
// pack asks as before. The pool refills in the background once two packs
// in a row had the same size (a single small write prepares nothing; ids
// of another size give way only to a run of namedSwitch packs), and only
// uses ids prepared less than namedMaxAge ago: the file store takes no
// older object (filestore/named.go), which keeps gc's grace rule true.
// Ids taken from the engine and never used are lost, as the ids of a
// crashed writer are (ids are 64-bit and never reused).
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
	namedCount  = 32               // ids prepared at a time
	namedLow    = 8                // a refill starts when fewer remain
	namedSwitch = 4                // packs of a new size in a row that replace the ids held
	namedMax    = 64 << 10         // largest pack that takes a prepared name
	namedMaxAge = 90 * time.Second // below the file store's limit
)

// preparer is a store that can make objects' names durable ahead of
// their Puts (filestore.Store.Prepare).
type preparer interface {
	Prepare(ctx context.Context, keys []string) []string
	Unprepare(keys []string)
}

// namedPool is a Store's reserved ids with prepared block-0 keys.
type namedPool struct {
	p     preparer // nil: the store cannot prepare
	newID IDFunc   // the engine's, from Config.NewID

	mu        sync.Mutex
	size      int // the block size the ids are prepared for
	ids       []namedID
	last      int // size of the latest pack
	streak    int // packs of size last in a row
	refilling bool
	stopped   bool
}

type namedID struct {
	id   meta.SliceID
	made time.Time
}

// findPreparer returns the store under objects' wrappers that can
// prepare names, or nil.
func findPreparer(objects object.Store) preparer {
	p, _ := object.Find[preparer](objects)
	return p
}

// takeNamed returns a slice id whose block-0 key of size bytes is
// prepared, or 0, and starts a refill when the pool runs low or should
// change size.
func (s *Store) takeNamed(size int) meta.SliceID {
	n := &s.named
	if n.p == nil || n.newID == nil || size > namedMax {
		return 0
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.last == size {
		n.streak++
	} else {
		n.last, n.streak = size, 1
	}
	var id meta.SliceID
	if n.size == size {
		for len(n.ids) > 0 && id == 0 {
			x := n.ids[0]
			n.ids = n.ids[1:]
			if time.Since(x.made) < namedMaxAge {
				id = x.id
			} else {
				s.dropNamed(size, x.id)
			}
		}
	}
	if !n.refilling && !n.stopped && n.wants(size) {
		n.refilling = true
		if !s.spawn(func() { s.refillNamed(size) }) {
			n.refilling = false
		}
	}
	return id
}

// wants reports whether the pool should refill for packs of size bytes:
// two in a row of its own size once it runs low, or, to replace ids of
// another size that it still holds, namedSwitch in a row, so that mixed
// sizes do not make it drop and prepare names over and over. Called
// with n.mu held.
func (n *namedPool) wants(size int) bool {
	switch {
	case n.size == size:
		return n.streak >= 2 && len(n.ids) < namedLow
	case len(n.ids) == 0:
		return n.streak >= 2
	}
	return n.streak >= namedSwitch
}

// dropNamed removes the prepared object of an id not to be used, in the
// background. Called with s.named.mu held.
func (s *Store) dropNamed(size int, id meta.SliceID) {
	key := BlockKey(id, 0, size)
	if !s.spawn(func() { s.named.p.Unprepare([]string{key}) }) {
		s.named.p.Unprepare([]string{key})
	}
}

// refillNamed tops the pool up with ids prepared for size-byte blocks,
// first dropping those prepared for another size.
func (s *Store) refillNamed(size int) {
	n := &s.named
	n.mu.Lock()
	var old []namedID
	oldSize := n.size
	if n.size != size {
		old, n.ids, n.size = n.ids, nil, size
	}
	want := namedCount - len(n.ids)
	n.mu.Unlock()
	n.p.Unprepare(namedKeys(old, oldSize))
	var ids []namedID
	for range want {
		id, err := n.newID(s.ctx)
		if err != nil || id == 0 {
			break
		}
		ids = append(ids, namedID{id: id})
	}
	prepared := map[string]bool{}
	for _, k := range n.p.Prepare(s.ctx, namedKeys(ids, size)) {
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
	n.mu.Lock()
	if n.stopped || n.size != size {
		old, ready = ready, nil
	} else {
		n.ids = append(n.ids, ready...)
		old = nil
	}
	n.refilling = false
	n.mu.Unlock()
	n.p.Unprepare(namedKeys(old, size))
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
	left, size := n.ids, n.size
	n.ids = nil
	n.mu.Unlock()
	n.p.Unprepare(namedKeys(left, size))
}

// namedKeys returns the block-0 keys of ids for size-byte blocks.
func namedKeys(ids []namedID, size int) []string {
	keys := make([]string, len(ids))
	for i, x := range ids {
		keys[i] = BlockKey(x.id, 0, size)
	}
	return keys
}
