package vfs

import (
	"context"
	"sort"
	"sync"
	"syscall"
	"time"

	"shoal/internal/meta"
)

// readdirPage is how many entries one engine call returns for a
// readdirplus whose attributes may serve the kernel's next requests too
// (see Readdir), and for a lookup's read-ahead (LookupListed). A
// readdirplus page that must be read afresh for every kernel request is as
// long as the kernel's buffer holds.
const readdirPage = 1000

// listPage is how many names one engine call returns for a plain readdir:
// names cost the engine little beside the read itself (on Redis one
// script per page, on SQL one statement), and a window of this many is a
// megabyte at most.
const listPage = 8192

// dirStream is an open directory: a window of entries fetched page by page,
// so a directory of millions of entries is never held whole. Offsets are
// positions: 0 is ".", 1 is "..", 2 the first entry; an entry's next offset
// is its position plus one.
type dirStream struct {
	mu       sync.Mutex
	ino      meta.Ino
	parent   meta.Ino
	start    uint64 // offset of page[0]
	page     []meta.DirEntry
	before   string    // name of the entry just before page[0] ("" at the start)
	done     bool      // the page ends the directory
	withAttr bool      // the page carries attributes that may still be served
	gen      uint64    // FS.changes before the page was read
	readAt   time.Time // when the page's read began
	plusPage int       // entries per page with attributes, for this request
	small    bool      // read kernel-sized attribute pages: no request has shared one yet, or a change dropped the last
	reuse    time.Duration
	ahead    *aheadPage // the next page, being read in the background
}

// aheadPage is a page read in the background while the kernel consumes
// the one before (see nextPage).
type aheadPage struct {
	after string        // the page starts after this name
	size  int           // entries asked for
	plus  bool          // with attributes
	kept  bool          // kept across a page with attributes read meanwhile
	ready chan struct{} // closed when the fields below are set
	read  readPage
}

// readPage is one engine read of a page.
type readPage struct {
	page []meta.DirEntry
	gen  uint64    // FS.changes before the read
	at   time.Time // when the read began
	err  error
}

// Opendir opens a directory for reading. A caller whose permissions the
// kernel has checked (a trusted credential: default_permissions) is not
// checked again: the engine's Access would only read the attributes the
// Getattr just read, one more round trip before every listing.
func (fs *FS) Opendir(ctx context.Context, ino meta.Ino) (Fh, error) {
	attr, err := fs.engine.Getattr(ctx, ino)
	if err != nil {
		return 0, err
	}
	if attr.Type != meta.TypeDir {
		return 0, syscall.ENOTDIR
	}
	if !meta.CredFrom(ctx).Trusted {
		if err := fs.engine.Access(ctx, ino, 4); err != nil {
			return 0, err
		}
	}
	parent := attr.Parent
	if ino == meta.RootIno || parent == 0 {
		parent = ino
	}
	d := &dirStream{ino: ino, parent: parent, start: 2, small: true}
	fs.mu.Lock()
	fs.nextFh++
	fh := fs.nextFh
	fs.dirs[fh] = d
	if fs.journal != nil {
		fs.noteJournal(fs.journal.OpenDir(uint64(fh), uint64(ino)))
	}
	fs.mu.Unlock()
	return fh, nil
}

// Releasedir closes a directory handle.
func (fs *FS) Releasedir(fh Fh) {
	fs.mu.Lock()
	delete(fs.dirs, fh)
	if fs.journal != nil {
		fs.noteJournal(fs.journal.ReleaseDir(uint64(fh)))
	}
	fs.mu.Unlock()
}

// Changed records that an operation that may have changed an inode or a
// name, or made the kernel forget what it knew of one (open), has
// completed. The fusefs adaptor calls it before replying to such an
// operation; getattr and lookup, which only tell the kernel an inode's
// attributes afresh, call Refreshed instead.
func (fs *FS) Changed() { fs.changes.Add(1) }

// Readdir lists entries from offset off, calling add with each entry, the
// offset after it and when its attributes were read, until add returns
// false. With plus > 0, entries carry attributes, read about plus at a
// time (how many the kernel's buffer holds); no page is read for a
// request that has had that many.
//
// Attributes read for an earlier request may answer this one only while
// they are younger than reuse and this mount completed no operation since
// they were read (Changed), nor told the kernel the inode afresh
// (Refreshed; that entry's attributes are then read again): the kernel
// drops attributes older than the changes it saw during a request, not
// those it saw before, and would take older ones as news (a shrunken
// size, which O_APPEND then writes at). Within those bounds a page of
// readdirPage entries serves many kernel requests; the caller shortens the kernel's cache timeouts by the
// attributes' age, so nothing is cached longer after its engine read than
// a fresh reply would be. reuse 0 (--strict) reads afresh every time.
func (fs *FS) Readdir(ctx context.Context, fh Fh, off uint64, plusN int, reuse time.Duration, add func(e meta.DirEntry, next uint64, read time.Time) bool) error {
	plus := plusN > 0
	fs.mu.Lock()
	d, ok := fs.dirs[fh]
	fs.mu.Unlock()
	if !ok {
		return syscall.EBADF
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if off == 0 {
		// The first request, or a rewind (rewinddir, seekdir to the
		// start): the listing must show the directory as it is now, so
		// nothing read before is used, not even the names read ahead.
		d.rewind()
	}
	if plus && d.withAttr {
		changed := d.gen != fs.changes.Load()
		if changed || reuse <= 0 || time.Since(d.readAt) >= reuse {
			d.withAttr, d.small = false, changed
		} else {
			d.small = false
		}
	}
	d.plusPage, d.reuse = plusN, reuse
	if reuse <= 0 {
		d.small = true
	}
	now := time.Now()
	if off == 0 && !add(meta.DirEntry{Name: ".", Ino: d.ino, Type: meta.TypeDir}, 1, now) {
		return nil
	}
	if off <= 1 {
		if !add(meta.DirEntry{Name: "..", Ino: d.parent, Type: meta.TypeDir}, 2, now) {
			return nil
		}
		off = 2
	}
	for sent := 0; ; {
		if plus && sent >= plusN {
			// About what the kernel's buffer holds: reading the next page
			// for the few bytes left would cost an engine read (and drop
			// the names read ahead) for entries the reply has no room for.
			return nil
		}
		if err := fs.fill(ctx, d, off, plus); err != nil {
			return err
		}
		if off >= d.start+uint64(len(d.page)) {
			return nil // end of directory
		}
		for i := off - d.start; i < uint64(len(d.page)); i++ {
			e := d.page[i]
			if plus && (e.Attr == nil || fs.listings.newer(e.Ino, d.readAt)) {
				a, err := fs.Getattr(ctx, e.Ino)
				if err != nil {
					continue // removed since the page was read
				}
				fs.Refreshed(e.Ino)
				e.Attr = &a
			}
			if !add(e, d.start+i+1, d.readAt) {
				return nil
			}
			off, sent = d.start+i+1, sent+1
		}
	}
}

// rewind empties d's window and drops the page read ahead: the next
// request reads from the start afresh.
func (d *dirStream) rewind() {
	d.start, d.page, d.before, d.done = 2, nil, "", false
	d.withAttr, d.small, d.ahead = false, true, nil
}

// fill moves d's window so that it holds offset off, unless the directory
// ends before it. For readdirplus a window without attributes that may
// still be served (see Readdir) is re-read with attributes from off.
// Attributes read after the request arrived are always safe: the kernel
// drops those older than its own changes.
func (fs *FS) fill(ctx context.Context, d *dirStream, off uint64, plus bool) error {
	if off < d.start {
		d.rewind() // seekdir back
	}
	for off >= d.start+uint64(len(d.page)) && !d.done {
		if err := fs.nextPage(ctx, d, plus); err != nil {
			return err
		}
	}
	if !plus || d.withAttr || off >= d.start+uint64(len(d.page)) {
		return nil
	}
	if off > d.start {
		d.before, d.page, d.start = d.page[off-d.start-1].Name, nil, off
	} else {
		d.page = nil
	}
	d.done = false
	return fs.nextPage(ctx, d, plus)
}

// nextPage reads the page after d's window, and starts the read of the
// one after it in the background, which the next call takes if it asks
// for that page and, for a page with attributes, nothing changed since
// that read began and it is young enough: the kernel consumes one page
// while the engine reads the next.
// After the first page of a listing, read with attributes and as long as
// the kernel's buffer, the next is read without (the kernel's next
// request, unless names are being looked up); after a later page read
// that short, none is (the kernel asks for attributes page by page).
// Names read ahead also serve a request for the names after any of them
// (namesAfter), and stay across one page with attributes read meanwhile
// (a lookup made the kernel ask for attributes once more): the plain
// requests after it take the rest of them, so no name is read twice.
func (fs *FS) nextPage(ctx context.Context, d *dirStream, plus bool) error {
	after, size := d.before, listPage
	if n := len(d.page); n > 0 {
		after = d.page[n-1].Name
	}
	if plus {
		size = readdirPage
		if d.small {
			size = max(d.plusPage, 1)
		}
	}
	var r readPage
	a := d.ahead
	more := false // the page read stops short of the directory's end
	keep := false // d.ahead stays: names the next requests may want
	if a != nil && a.after == after && a.size == size && a.plus == plus {
		<-a.ready
		r = a.read
		// A page of names only may be older: the kernel caches nothing of
		// it, and a listing may or may not show what changed after it
		// was opened (POSIX), which is after this read began.
		if r.err != nil || plus && (r.gen != fs.changes.Load() || time.Since(r.at) >= d.reuse) {
			r = fs.readPage(ctx, d.ino, after, size, plus)
		}
		more = len(r.page) == size
		d.ahead = nil
	} else if page, full, ok := d.ahead.namesAfter(after, plus); ok {
		// The kernel asked for attributes in between (READDIRPLUS_AUTO
		// does when names were looked up meanwhile): the names read
		// ahead still serve the names after the ones it got.
		r, more = readPage{page: page, gen: a.read.gen, at: a.read.at}, full
		d.ahead = nil
	} else {
		r = fs.readPage(ctx, d.ino, after, size, plus)
		more = len(r.page) == size
		// A page with attributes between pages of names (READDIRPLUS_AUTO
		// asks for one after a lookup in the directory) keeps the names
		// read ahead for the plain requests after it; a second one in a
		// row drops them (ls -l: the kernel goes on with attributes).
		if keep = plus && a != nil && !a.plus && !a.kept; keep {
			a.kept = true
		} else {
			d.ahead = nil
		}
	}
	if r.err != nil {
		return r.err
	}
	d.start += uint64(len(d.page))
	d.before, d.page, d.done, d.withAttr = after, r.page, !more, plus
	d.gen, d.readAt = r.gen, r.at
	if d.reuse <= 0 {
		return nil
	}
	fs.listings.add(d.ino, after, r, false)
	if d.done || len(r.page) == 0 || keep {
		return nil
	}
	a = &aheadPage{after: r.page[len(r.page)-1].Name, size: size, plus: plus, ready: make(chan struct{})}
	if plus && d.small {
		if after != "" {
			return nil // the kernel asks for attributes page by page
		}
		// The first page of a listing: the kernel asks for the names
		// after it without attributes unless they are being looked up
		// (READDIRPLUS_AUTO), so those are read meanwhile.
		a.size, a.plus = listPage, false
	}
	d.ahead = a
	go func() {
		a.read = fs.readPage(ctx, d.ino, a.after, a.size, a.plus)
		close(a.ready)
	}()
	return nil
}

// namesAfter returns the names a's page of names only holds after the
// name after, when the page's range holds after (a page that started
// before it and reaches past it) and the request is for names only; full
// reports the page read stopped short of the directory's end. It waits for
// the read.
func (a *aheadPage) namesAfter(after string, plus bool) (page []meta.DirEntry, full, ok bool) {
	if a == nil || a.plus || plus || after < a.after {
		return nil, false, false
	}
	<-a.ready
	r := a.read
	if r.err != nil || len(r.page) == 0 {
		return nil, false, false
	}
	j := 0
	if after != a.after {
		j = sort.Search(len(r.page), func(j int) bool { return r.page[j].Name >= after })
		if j == len(r.page) || r.page[j].Name != after {
			return nil, false, false
		}
		j++
	}
	full = len(r.page) == a.size
	if j == len(r.page) && full {
		return nil, false, false // the page ends there: the rest is unread
	}
	return r.page[j:], full, true
}

// readPage reads up to size entries after the name after. Attributes come
// with this mount's pending writes as they were before the engine was
// read, and the change count and time taken before it: a later change or
// age then drops the page's attributes, never an earlier one.
func (fs *FS) readPage(ctx context.Context, ino meta.Ino, after string, size int, plus bool) readPage {
	var open map[meta.Ino]pending
	r := readPage{gen: fs.changes.Load(), at: time.Now()}
	if plus {
		open = fs.pendingAll() // before the engine is read: see pending
	}
	r.page, r.err = fs.engine.Readdir(ctx, ino, after, size, plus)
	for i := range r.page {
		if p, ok := open[r.page[i].Ino]; ok && r.page[i].Attr != nil {
			p.apply(r.page[i].Attr)
		}
	}
	return r
}
