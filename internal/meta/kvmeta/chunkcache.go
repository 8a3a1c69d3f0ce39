package kvmeta

import (
	"slices"
	"sync"

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
// started from and untouched by it, move to the new one.
//
// Version 1 volumes have no counter (and older binaries, which may write
// them, would not keep one), so their lists are never cached.
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
	painted []meta.Slice
}

// maxCachedRecords bounds the cache: 24 bytes of memory per record, so
// about 50 MB.
const maxCachedRecords = 2 << 20

// get returns a copy of the list and keys of chunk ref if cached at gen,
// and its painting if known (shared: not to be changed).
func (c *chunkCache) get(ref chunkRef, gen uint64) ([]meta.Slice, [][]byte, []meta.Slice, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.inodes[ref.ino][ref.index]
	if !ok || e.gen != gen {
		return nil, nil, nil, false
	}
	// Room to append a commit's records without copying the list again.
	list := append(make([]meta.Slice, 0, len(e.list)+appendRoom), e.list...)
	return list, slices.Clone(e.keys), e.painted, true
}

// appendRoom is the spare capacity of a list get returns.
const appendRoom = 64

// put caches chunk ref's list, keys and painting (nil if unknown) at gen
// (nil list: forget it). The caller gives them up.
func (c *chunkCache) put(ref chunkRef, gen uint64, list []meta.Slice, keys [][]byte, painted []meta.Slice) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop(ref)
	size := len(list) + len(painted)
	if len(list) == 0 || size > maxCachedRecords/4 {
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
	m[ref.index] = cachedChunk{gen: gen, list: slices.Clip(list), keys: keys, painted: painted}
	c.records += size
}

// advance moves ino's entries cached at generation from to generation to:
// a transaction that started at from changed none of them.
func (c *chunkCache) advance(ino meta.Ino, from, to uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for index, e := range c.inodes[ino] {
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
		c.records -= len(e.list) + len(e.painted)
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
