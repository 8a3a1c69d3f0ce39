package data

import "sync/atomic"

// Stats are a Store's counters since New, for status output and metrics.
type Stats struct {
	BlocksPut     int64 // block objects stored
	BytesPut      int64 // bytes in them
	PutFailures   int64 // block uploads that failed (after the store's own retries)
	BlocksFetched int64 // whole-block Gets
	RangesFetched int64 // ranged Gets (small random reads)
	BytesFetched  int64 // bytes received by both
	CacheHits     int64 // block reads served from the cache
	CacheMisses   int64 // block reads that went to the store
	BufferUsed    int64 // write buffer bytes held now
	BufferLimit   int64 // the write buffer's size (Config.BufferSize)
	CacheUsed     int64 // read cache bytes held now
}

// counters are the live Stats fields.
type counters struct {
	blocksPut, bytesPut, putFailures           atomic.Int64
	blocksFetched, rangesFetched, bytesFetched atomic.Int64
	cacheHits, cacheMisses                     atomic.Int64
}

// Stats returns a snapshot of s's counters.
func (s *Store) Stats() Stats {
	c := &s.counters
	return Stats{
		BlocksPut:     c.blocksPut.Load(),
		BytesPut:      c.bytesPut.Load(),
		PutFailures:   c.putFailures.Load(),
		BlocksFetched: c.blocksFetched.Load(),
		RangesFetched: c.rangesFetched.Load(),
		BytesFetched:  c.bytesFetched.Load(),
		CacheHits:     c.cacheHits.Load(),
		CacheMisses:   c.cacheMisses.Load(),
		BufferUsed:    s.Used(),
		BufferLimit:   s.cfg.BufferSize,
		CacheUsed:     s.cache.size(),
	}
}
