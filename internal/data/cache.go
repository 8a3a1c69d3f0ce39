package data

import (
	"container/list"
	"context"
	"sync"
)

// cache is a byte-bounded LRU of whole blocks, keyed by object key, with
// singleflight loading: concurrent loads of one key share one fetch. Block
// objects are immutable, so an entry never goes stale; DeleteSlice drops
// entries only to free memory early.
//
// Cached slices are never modified or recycled: a reader may still copy
// from an entry after it was evicted, and the garbage collector frees it
// when the last reader is done.
type cache struct {
	mu    sync.Mutex
	limit int64
	used  int64
	lru   *list.List // of *cacheEntry, most recent first
	items map[string]*list.Element
	calls map[string]*call
}

type cacheEntry struct {
	key  string
	data []byte
}

// call is one in-flight load.
type call struct {
	done chan struct{}
	data []byte
	err  error
}

func newCache(limit int64) *cache {
	return &cache{
		limit: max(limit, 0),
		lru:   list.New(),
		items: map[string]*list.Element{},
		calls: map[string]*call{},
	}
}

// get returns a cached block.
func (c *cache) get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(e)
	return e.Value.(*cacheEntry).data, true
}

// has reports whether key is cached or loading.
func (c *cache) has(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.items[key]
	_, loading := c.calls[key]
	return ok || loading
}

// start begins loading key with fetch unless it is cached or loading, and
// returns the call to wait on (nil if cached). spawn runs fetch in the
// background; the load outlives any one waiter's context.
func (c *cache) start(key string, fetch func() ([]byte, error), spawn func(func()) bool) (*call, []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		c.lru.MoveToFront(e)
		return nil, e.Value.(*cacheEntry).data
	}
	if cl, ok := c.calls[key]; ok {
		return cl, nil
	}
	cl := &call{done: make(chan struct{})}
	c.calls[key] = cl
	if !spawn(func() { c.finish(key, cl, fetch) }) {
		delete(c.calls, key)
		cl.err = errStoreClosed
		close(cl.done)
	}
	return cl, nil
}

// finish runs a load and publishes its outcome.
func (c *cache) finish(key string, cl *call, fetch func() ([]byte, error)) {
	data, err := fetch()
	c.mu.Lock()
	delete(c.calls, key)
	if err == nil {
		c.addLocked(key, data)
	}
	c.mu.Unlock()
	cl.data, cl.err = data, err
	close(cl.done)
}

// load returns key's block, fetching it once for all concurrent callers.
// A caller whose ctx can never end (Done is nil: a FUSE read) fetches in
// its own goroutine when no load of key is in flight, as it would wait
// for the whole fetch anyway: a goroutine hand-off per cold block costs a
// wake-up on a busy machine. run tracks it like spawn does (false: the
// Store is closed). Any other caller waits in a select, so that its
// cancellation ends the wait while the load runs on for the others.
func (c *cache) load(ctx context.Context, key string, fetch func() ([]byte, error), spawn, run func(func()) bool) ([]byte, error) {
	if ctx.Done() == nil {
		c.mu.Lock()
		if e, ok := c.items[key]; ok {
			c.lru.MoveToFront(e)
			c.mu.Unlock()
			return e.Value.(*cacheEntry).data, nil
		}
		cl, ok := c.calls[key]
		if !ok {
			cl = &call{done: make(chan struct{})}
			c.calls[key] = cl
		}
		c.mu.Unlock()
		if ok {
			<-cl.done
			return cl.data, cl.err
		}
		if !run(func() { c.finish(key, cl, fetch) }) {
			c.mu.Lock()
			delete(c.calls, key)
			c.mu.Unlock()
			cl.err = errStoreClosed
			close(cl.done)
		}
		return cl.data, cl.err
	}
	cl, data := c.start(key, fetch, spawn)
	if cl == nil {
		return data, nil
	}
	select {
	case <-cl.done:
		return cl.data, cl.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// addLocked inserts a block, evicting the least recently used ones to stay
// within the limit. A block larger than the limit is not kept.
func (c *cache) addLocked(key string, data []byte) {
	size := int64(len(data))
	if size > c.limit {
		return
	}
	if _, ok := c.items[key]; ok {
		return
	}
	for c.used+size > c.limit {
		c.evictLocked(c.lru.Back())
	}
	c.items[key] = c.lru.PushFront(&cacheEntry{key: key, data: data})
	c.used += size
}

func (c *cache) evictLocked(e *list.Element) {
	ce := c.lru.Remove(e).(*cacheEntry)
	delete(c.items, ce.key)
	c.used -= int64(len(ce.data))
}

// drop removes key from the cache.
func (c *cache) drop(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		c.evictLocked(e)
	}
}

// size returns the cached bytes.
func (c *cache) size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}
