package vfs

import (
	"context"
	"sort"
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
// It keeps the pages as read, not an entry per name: a page is in name
// order (the engine's key order), so a name is found by a binary search of
// the newest page whose range holds it, and keeping a page of thousands of
// names costs no more than keeping one (a cold listing of a big directory
// went at the rate of filling a map with its names). A page's range is
// the names after the one it was read after, up to its last; a page adds
// to what a directory has unless it holds the whole range of an older
// one, which it then replaces (a directory listed again and again keeps
// one listing). A name in the range of a newer page that lacks it is not
// found, even if an older page has it: it was gone at the newer read.
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
	dirs  map[meta.Ino][]*listedPage // each directory's pages, oldest first
	fresh map[meta.Ino]time.Time     // when the kernel was last told an inode afresh
	n     int                        // entries in the pages and in fresh
}

// listedPage is one page of a listing, as read.
type listedPage struct {
	after string          // the page starts after this name ("": the first)
	ents  []meta.DirEntry // in name order; attributes nil if read names only
	ahead bool            // read by a lookup's read-ahead, not by the listing
	gen   uint64          // FS.changes before the read
	at    time.Time       // when the read began
}

// last is the name the page's range ends with.
func (p *listedPage) last() string { return p.ents[len(p.ents)-1].Name }

// covers reports whether name is in the page's range.
func (p *listedPage) covers(name string) bool {
	return name > p.after && name <= p.last()
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
// read-ahead or by the listing. The page is kept as it is: its entries
// must not change afterwards.
func (c *listingCache) add(dir meta.Ino, after string, r readPage, ahead bool) {
	if len(r.page) == 0 {
		return
	}
	p := &listedPage{after: after, ents: r.page, ahead: ahead, gen: r.gen, at: r.at}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.room(len(r.page))
	pages := c.dirs[dir]
	kept := pages[:0]
	for _, old := range pages {
		if old.after >= p.after && old.last() <= p.last() {
			c.n -= len(old.ents) // within the new page's range: replaced
			continue
		}
		kept = append(kept, old)
	}
	clear(pages[len(kept):])
	c.dirs[dir] = append(kept, p)
	c.n += len(r.page)
}

// room makes room for n more entries: past maxListed the cache starts
// afresh (dropping the listings with the fresh marks is safe).
func (c *listingCache) room(n int) {
	if c.n+n > maxListed || c.dirs == nil {
		c.dirs, c.fresh, c.n = map[meta.Ino][]*listedPage{}, map[meta.Ino]time.Time{}, 0
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

// get returns the listed entry dir/name, from the newest page whose range
// holds name.
func (c *listingCache) get(dir meta.Ino, name string) (listed, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pages := c.dirs[dir]
	for i := len(pages) - 1; i >= 0; i-- {
		p := pages[i]
		if !p.covers(name) {
			continue
		}
		j := sort.Search(len(p.ents), func(j int) bool { return p.ents[j].Name >= name })
		if j == len(p.ents) || p.ents[j].Name != name {
			return listed{}, false
		}
		after := p.after
		if j > 0 {
			after = p.ents[j-1].Name
		}
		e := p.ents[j]
		return listed{ino: e.Ino, attr: e.Attr, after: after, ahead: p.ahead, gen: p.gen, at: p.at}, true
	}
	return listed{}, false
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
