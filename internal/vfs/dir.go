package vfs

import (
	"context"
	"sync"
	"syscall"

	"shoal/internal/meta"
)

// readdirPage is how many entries one engine call returns.
const readdirPage = 1000

// dirStream is an open directory: a window of entries fetched page by page,
// so a directory of millions of entries is never held whole. Offsets are
// positions: 0 is ".", 1 is "..", 2 the first entry; an entry's next offset
// is its position plus one.
type dirStream struct {
	mu     sync.Mutex
	ino    meta.Ino
	parent meta.Ino
	start  uint64 // offset of page[0]
	page   []meta.DirEntry
	done   bool // the page ends the directory
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
	fs.mu.Unlock()
	return fh, nil
}

// Releasedir closes a directory handle.
func (fs *FS) Releasedir(fh Fh) {
	fs.mu.Lock()
	delete(fs.dirs, fh)
	fs.mu.Unlock()
}

// Readdir lists entries from offset off, calling add with each entry and
// the offset after it until add returns false. With plus, entries carry
// attributes.
func (fs *FS) Readdir(ctx context.Context, fh Fh, off uint64, plus bool, add func(e meta.DirEntry, next uint64) bool) error {
	fs.mu.Lock()
	d, ok := fs.dirs[fh]
	fs.mu.Unlock()
	if !ok {
		return syscall.EBADF
	}
	d.mu.Lock()
	defer d.mu.Unlock()
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
				a, err := fs.entryAttr(ctx, e)
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
// ends before it.
func (fs *FS) fill(ctx context.Context, d *dirStream, off uint64, plus bool) error {
	if off < d.start {
		d.start, d.page, d.done = 2, nil, false // rewind (seekdir back)
	}
	for off >= d.start+uint64(len(d.page)) && !d.done {
		after := ""
		if n := len(d.page); n > 0 {
			after = d.page[n-1].Name
		} else if d.start > 2 {
			return nil
		}
		page, err := fs.engine.Readdir(ctx, d.ino, after, readdirPage, plus)
		if err != nil {
			return err
		}
		d.start += uint64(len(d.page))
		d.page = page
		d.done = len(page) < readdirPage
	}
	return nil
}

// entryAttr returns a listed entry's attributes with pending writes.
func (fs *FS) entryAttr(ctx context.Context, e meta.DirEntry) (meta.Attr, error) {
	if e.Attr == nil {
		return fs.Getattr(ctx, e.Ino)
	}
	a := *e.Attr
	fs.overlay(e.Ino, &a)
	return a, nil
}
