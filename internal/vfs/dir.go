package vfs

import (
	"context"
	"sync"
	"syscall"

	"shoal/internal/meta"
)

// readdirPage is how many entries one engine call returns for a plain
// readdir. A readdirplus page is as long as the caller says the kernel's
// buffer holds: its attributes must be read afresh for every kernel
// request (see fill), so reading more would be wasted.
const readdirPage = 1000

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
	before   string // name of the entry just before page[0] ("" at the start)
	done     bool   // the page ends the directory
	withAttr bool   // the page was read with attributes during this request
	plusPage int    // entries per page with attributes, for this request
}

// Opendir opens a directory for reading.
func (fs *FS) Opendir(ctx context.Context, ino meta.Ino) (Fh, error) {
	attr, err := fs.engine.Getattr(ctx, ino)
	if err != nil {
		return 0, err
	}
	if attr.Type != meta.TypeDir {
		return 0, syscall.ENOTDIR
	}
	if err := fs.engine.Access(ctx, ino, 4); err != nil {
		return 0, err
	}
	parent := attr.Parent
	if ino == meta.RootIno || parent == 0 {
		parent = ino
	}
	d := &dirStream{ino: ino, parent: parent, start: 2}
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

// Readdir lists entries from offset off, calling add with each entry and
// the offset after it until add returns false. With plus > 0, entries
// carry attributes, read about plus at a time (how many the kernel's
// buffer holds: fewer costs another engine call, more is wasted).
func (fs *FS) Readdir(ctx context.Context, fh Fh, off uint64, plusN int, add func(e meta.DirEntry, next uint64) bool) error {
	plus := plusN > 0
	fs.mu.Lock()
	d, ok := fs.dirs[fh]
	fs.mu.Unlock()
	if !ok {
		return syscall.EBADF
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.withAttr = false // attributes read for an earlier request are stale
	d.plusPage = plusN
	var open map[meta.Ino]pending
	if plus {
		open = fs.pendingAll() // before the engine is read: see pending
	}
	if off == 0 && !add(meta.DirEntry{Name: ".", Ino: d.ino, Type: meta.TypeDir}, 1) {
		return nil
	}
	if off <= 1 {
		if !add(meta.DirEntry{Name: "..", Ino: d.parent, Type: meta.TypeDir}, 2) {
			return nil
		}
		off = 2
	}
	for {
		if err := fs.fill(ctx, d, off, plus); err != nil {
			return err
		}
		if off >= d.start+uint64(len(d.page)) {
			return nil // end of directory
		}
		for i := off - d.start; i < uint64(len(d.page)); i++ {
			e := d.page[i]
			if plus {
				a, err := fs.entryAttr(ctx, e, open)
				if err != nil {
					continue // removed since the page was read
				}
				e.Attr = &a
			}
			if !add(e, d.start+i+1) {
				return nil
			}
			off = d.start + i + 1
		}
	}
}

// fill moves d's window so that it holds offset off, unless the directory
// ends before it. For readdirplus the window is re-read with attributes
// once per request: attributes cached from an earlier request could be
// older than a change the kernel has seen since (an append), and the
// kernel would take them as news (a shrunken size, which O_APPEND then
// writes at). Attributes read after the request arrived are safe: the
// kernel drops those older than its own changes.
func (fs *FS) fill(ctx context.Context, d *dirStream, off uint64, plus bool) error {
	if off < d.start {
		d.start, d.page, d.before, d.done = 2, nil, "", false // rewind (seekdir back)
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

// nextPage reads the page after d's window.
func (fs *FS) nextPage(ctx context.Context, d *dirStream, plus bool) error {
	after, size := d.before, readdirPage
	if n := len(d.page); n > 0 {
		after = d.page[n-1].Name
	}
	if plus {
		size = max(d.plusPage, 1)
	}
	page, err := fs.engine.Readdir(ctx, d.ino, after, size, plus)
	if err != nil {
		return err
	}
	d.start += uint64(len(d.page))
	d.before, d.page, d.done, d.withAttr = after, page, len(page) < size, plus
	return nil
}

// entryAttr returns a listed entry's attributes with the pending writes
// captured before the listing was read.
func (fs *FS) entryAttr(ctx context.Context, e meta.DirEntry, open map[meta.Ino]pending) (meta.Attr, error) {
	if e.Attr == nil {
		return fs.Getattr(ctx, e.Ino)
	}
	a := *e.Attr
	if p, ok := open[e.Ino]; ok {
		p.apply(&a)
	}
	return a, nil
}
