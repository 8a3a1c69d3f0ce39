package kvmeta

import (
	"slices"
	"sync"
	"unsafe"

	"shoal/internal/meta"
)

// The chunk cache keeps decoded slice lists of recently used chunks, so a
// commit to a chunk of thousands of records (a VM image after a burst of
// random writes) does not read and decode them all again each time.
//
// An entry is valid for one generation of its inode: a counter in the
// attr record (version 2 volumes) that every change of any chunk key of
// the inode increments, in the same transaction (setChunk, appendChunk,
// deleteChunks). A transaction has read the attr record before it asks
// for a chunk, so comparing the counter it read with the entry's tells
// whether the entry is the committed list, whichever client changed it.
// After a commit, the chunks it wrote are cached at the new generation,
// and the inode's other entries, valid at the generation the transaction
// started from and untouched by it, move to the new one. A list a
// transaction read from its keys is cached at the generation read, also
// only after the commit (readList): what a transaction reads is
// committed only once it commits.
//
// The deletion of a file's chunks (unlink, truncation) takes their lists
// and keys from the cache too when it holds every chunk the length allows
// (cachedChunks), instead of scanning the inode's chunk range.
//
// Version 1 volumes have no counter (and older binaries, which may write
// them, would not keep one), so their lists are never cached.
//
// A commit that only appends records (writeSlices) claims the cached list
// instead of copying it: it appends into the spare capacity of the list's
// array, past the entry's length, and after the commit that longer list
// becomes the next generation's entry. Copying a list of thousands of
// records on every commit cost more than the commit itself. This is safe
// because nothing ever changes the first len(list) records of a list in
// the cache: every other taker gets a copy (or, for the claimer's own
// records, cannot see them: its slice is shorter), at most one claim is
// out per entry, and a claimer that does not commit only leaves bytes past
// the entry's length, which the next claimer overwrites.
type chunkCache struct {
	mu      sync.Mutex
	inodes  map[meta.Ino]map[uint32]cachedChunk
	records int // records held, bounded by maxCachedRecords
}

type cachedChunk struct {
	gen  uint64
	list []meta.Slice
	keys [][]byte
	// painted is meta.Resolve(list, 0, meta.ChunkSize) when known (a
	// commit computed it for the allocated bytes); shared, never changed.
	painted *painting
	claimed bool // a transaction appends to list in place (see above)
}

// maxCachedRecords bounds the cache: 24 bytes of memory per record, so
// about 50 MB.
const maxCachedRecords = 2 << 20

// get returns the list and keys of chunk ref if cached at gen, and its
// painting if known (shared: not to be changed). With claim set, a caller
// that will only append to the list gets the cached list itself when no
// one else has claimed it (claimed reports it; release gives it back);
// otherwise the list is a copy, with room to append a commit's records.
func (c *chunkCache) get(ref chunkRef, gen uint64, claim bool) (list []meta.Slice, keys [][]byte, painted *painting, claimed, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.inodes[ref.ino][ref.index]
	if !ok || e.gen != gen {
		return nil, nil, nil, false, false
	}
	if claim && !e.claimed {
		e.claimed = true
		c.inodes[ref.ino][ref.index] = e
		return e.list, slices.Clone(e.keys), e.painted, true, true
	}
	list = append(make([]meta.Slice, 0, len(e.list)+appendRoom), e.list...)
	return list, slices.Clone(e.keys), e.painted, false, true
}

// holds says whether chunk ref has an entry, of any generation.
func (c *chunkCache) holds(ref chunkRef) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.inodes[ref.ino][ref.index]
	return ok
}

// release gives back the claim on chunk ref's entry that returned list,
// unless a commit has replaced the entry since. (The entry may have moved
// to a later generation meanwhile, see advance.)
func (c *chunkCache) release(ref chunkRef, list []meta.Slice) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.inodes[ref.ino][ref.index]; ok && e.claimed && len(e.list) == len(list) && unsafe.SliceData(e.list) == unsafe.SliceData(list) {
		e.claimed = false
		c.inodes[ref.ino][ref.index] = e
	}
}

// appendRoom is the spare capacity of a list get returns.
const appendRoom = 64

// entrySize is what an entry counts against maxCachedRecords: its records
// and pieces, and one for itself (the empty lists of new files, see
// Engine.Mknod, are entries too).
func entrySize(list []meta.Slice, painted *painting) int { return 1 + len(list) + painted.size() }

// put caches chunk ref's list, keys and painting (nil if unknown) at gen
// (nil list: forget it; an empty one is a chunk known to have no records),
// unclaimed. The caller gives them up, with the
// list's spare capacity, which a later claim appends into.
func (c *chunkCache) put(ref chunkRef, gen uint64, list []meta.Slice, keys [][]byte, painted *painting) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop(ref)
	size := entrySize(list, painted)
	if list == nil || size > maxCachedRecords/4 {
		return
	}
	for c.records+size > maxCachedRecords {
		c.evictOne()
	}
	if c.inodes == nil {
		c.inodes = make(map[meta.Ino]map[uint32]cachedChunk)
	}
	m := c.inodes[ref.ino]
	if m == nil {
		m = make(map[uint32]cachedChunk)
		c.inodes[ref.ino] = m
	}
	m[ref.index] = cachedChunk{gen: gen, list: list, keys: keys, painted: painted}
	c.records += size
}

// advance moves ino's entries cached at generation from to generation to:
// a transaction that started at from changed none of them, except the
// chunks in wrote, which are dropped (a put of their new lists follows,
// but another transaction may look in between).
func (c *chunkCache) advance(ino meta.Ino, from, to uint64, wrote map[chunkRef][]meta.Slice) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for index, e := range c.inodes[ino] {
		if _, ok := wrote[chunkRef{ino, index}]; ok {
			c.drop(chunkRef{ino, index})
			continue
		}
		if e.gen == from {
			e.gen = to
			c.inodes[ino][index] = e
		} else {
			c.drop(chunkRef{ino, index})
		}
	}
}

// forget drops every entry of a deleted inode.
func (c *chunkCache) forget(ino meta.Ino) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for index := range c.inodes[ino] {
		c.drop(chunkRef{ino, index})
	}
}

// drop removes one entry (c.mu held).
func (c *chunkCache) drop(ref chunkRef) {
	m := c.inodes[ref.ino]
	if e, ok := m[ref.index]; ok {
		c.records -= entrySize(e.list, e.painted)
		delete(m, ref.index)
		if len(m) == 0 {
			delete(c.inodes, ref.ino)
		}
	}
}

// evictOne drops some entry (c.mu held): map order is as good as any for
// a cache that holds every chunk of a working set or thrashes anyway.
func (c *chunkCache) evictOne() {
	for ino, m := range c.inodes {
		for index := range m {
			c.drop(chunkRef{ino, index})
			return
		}
	}
}

// readList is a chunk's list as a transaction read it from its keys, at
// the generation of the attributes it read, for the cache. It goes into
// the cache only after the transaction committed (publishChunks,
// publishReads), never while it runs: the values a transaction reads are
// committed ones only once it commits. Until then they may be another
// operation's uncommitted writes (an engine that commits several
// operations together, as SQLite's group commit does, runs each after the
// ones before it in one transaction), which a failed commit rolls back; a
// list cached under the generation such a write gave would later be
// served for whatever another commit writes at that same generation.
type readList struct {
	gen  uint64
	list []meta.Slice
	keys [][]byte
}

// publishReads caches the lists the transaction read, once it committed
// (a View: once it ended without error).
func (t *txn) publishReads() {
	if t.cache == nil {
		return
	}
	for ref, r := range t.readLists {
		t.cache.put(ref, r.gen, r.list, r.keys, nil)
	}
}

// cachedList returns chunk ref's list if the cache holds it at the
// generation of the attributes t read (a copy), without reading anything:
// what t.chunk would return, or false.
func (t *txn) cachedList(ref chunkRef) ([]meta.Slice, bool) {
	if !t.cacheable(ref.ino) {
		return nil, false
	}
	if r, ok := t.readLists[ref]; ok && r.gen == t.gens[ref.ino] {
		return slices.Clone(r.list), true
	}
	ss, _, _, _, ok := t.cache.get(ref, t.gens[ref.ino], false)
	return ss, ok
}
