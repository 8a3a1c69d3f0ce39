package vfs

import (
	"context"
	"sync"
	"time"

	"shoal/internal/meta"
)

// maxListed bounds the entries the listing cache holds (about 150 bytes
// each); past it the cache starts afresh. What it holds is useful for a
// second at most, so only directories listed at that rate fill it.
const maxListed = 1 << 18

// listedFor is how long after a listing the lookup of a name it read
// reads the attributes of the names after it too (a stat of every entry
// goes on for seconds in a huge directory). The answers are fresh engine
// reads; only the guess that more lookups follow is that old.
const listedFor = 30 * time.Second

// listingCache keeps what listings read, so that the lookups that follow a
// listing (the stat of every entry, with the kernel asking for names only
// after a listing's first page) are answered without a round trip to the
// engine each. A plain listing reads names only; the first lookup of a
// listed name reads the attributes of it and the readdirPage names after
// it in one engine read (LookupListed), the next lookups take theirs from
// that read.
//
// An entry with attributes answers only what a readdirplus reply at its
// read would have let the kernel cache: while it is younger than the
// shorter cache timeout, with the kernel's timeouts shortened by its age,
// and only while this mount completed no operation since it was read
// (FS.Changed; the reasons are Readdir's). An engine's answer about one
// inode given to the kernel since (a getattr, a lookup not answered here)
// is newer than what a listing read before it: that inode's listed
// attributes are then not used (fresh), lest the kernel go back to them.
type listingCache struct {
	mu    sync.Mutex
	dirs  map[meta.Ino]map[string]listed
	fresh map[meta.Ino]time.Time // when the kernel was last told an inode afresh
	n     int                    // entries in dirs and fresh
}

// listed is one entry of a listing, as read.
type listed struct {
	ino   meta.Ino
	attr  *meta.Attr // nil if the listing read names only
	after string     // the name the listing read it after
	ahead bool       // read by a lookup's read-ahead, not by the listing
	gen   uint64     // FS.changes before the read
	at    time.Time  // when the read began
}

// add records a page of dir read after the name after, by a lookup's
// read-ahead or by the listing.
func (c *listingCache) add(dir meta.Ino, after string, r readPage, ahead bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.room(len(r.page))
	m := c.dirs[dir]
	if m == nil {
		m = make(map[string]listed, len(r.page)) // a listing's first page: sized once
		c.dirs[dir] = m
	}
	for _, e := range r.page {
		if _, ok := m[e.Name]; !ok {
			c.n++
		}
		m[e.Name] = listed{ino: e.Ino, attr: e.Attr, after: after, ahead: ahead, gen: r.gen, at: r.at}
		after = e.Name
	}
}

// room makes room for n more entries: past maxListed the cache starts
// afresh (dropping the listings with the fresh marks is safe).
func (c *listingCache) room(n int) {
	if c.n+n > maxListed || c.dirs == nil {
		c.dirs, c.fresh, c.n = map[meta.Ino]map[string]listed{}, map[meta.Ino]time.Time{}, 0
	}
}

// newer reports whether the kernel was told ino's attributes afresh at or
// after at.
func (c *listingCache) newer(ino meta.Ino, at time.Time) bool {
	c.mu.Lock()
	t, ok := c.fresh[ino]
	c.mu.Unlock()
	return ok && !t.Before(at)
}

// get returns the listed entry dir/name.
func (c *listingCache) get(dir meta.Ino, name string) (listed, bool) {
	c.mu.Lock()
	l, ok := c.dirs[dir][name]
	c.mu.Unlock()
	return l, ok
}

// Refreshed records that the kernel is being told ino's attributes as the
// engine has them now (a getattr, a lookup answered by the engine):
// listed attributes of ino read before are older and no longer served.
func (fs *FS) Refreshed(ino meta.Ino) {
	c := &fs.listings
	now := time.Now()
	c.mu.Lock()
	if _, ok := c.fresh[ino]; !ok {
		c.room(1)
		c.n++
	}
	c.fresh[ino] = now
	c.mu.Unlock()
}

// LookupListed answers a lookup of a name a listing of parent read: from
// the attributes read with it if they are younger than ttl, this mount
// completed no operation since and was not told of the inode afresh
// (Refreshed); for a name read less than listedFor ago without attributes,
// or by the listing itself with attributes older than ttl, from one engine
// read of the attributes of the name and the readdirPage names after it
// (a read-ahead: what it read is not read ahead again). It returns when
// the answer was read, by which the caller shortens the kernel's timeouts. ok is false for a name not listed, or gone: the caller asks
// the engine. ttl <= 0 (--strict) never answers.
func (fs *FS) LookupListed(ctx context.Context, parent meta.Ino, name string, ttl time.Duration) (e meta.Entry, read time.Time, ok bool) {
	if ttl <= 0 {
		return meta.Entry{}, time.Time{}, false
	}
	c := &fs.listings
	l, ok := c.get(parent, name)
	if !ok || time.Since(l.at) >= max(ttl, listedFor) {
		return meta.Entry{}, time.Time{}, false
	}
	old := l.attr != nil && time.Since(l.at) >= ttl
	if l.attr != nil && (l.gen != fs.changes.Load() || c.newer(l.ino, l.at)) || old && l.ahead {
		// Older than what the kernel may know; or too old and read ahead
		// once already: reading ahead again for lookups that come this
		// slowly would cost more than it saves.
		return meta.Entry{}, time.Time{}, false
	}
	if l.attr == nil || old {
		r := fs.readPage(ctx, parent, l.after, readdirPage, true)
		if r.err != nil || len(r.page) == 0 || r.page[0].Name != name {
			return meta.Entry{}, time.Time{}, false
		}
		c.add(parent, l.after, r, true)
		e := r.page[0]
		fs.Refreshed(e.Ino) // newer than any other listing of it (hard links)
		return meta.Entry{Ino: e.Ino, Attr: *e.Attr}, r.at, true
	}
	return meta.Entry{Ino: l.ino, Attr: *l.attr}, l.at, true
}
