package filestore

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"shoal/internal/object"
)

// List implements object.Store; the package doc describes its cost.
func (s *Store) List(ctx context.Context, prefix, after string, limit int) ([]object.Info, error) {
	w := &walker{s: s, ctx: ctx, prefix: prefix, after: after, limit: limit}
	// Start in the deepest directory the prefix names: "chunks/0/1" starts
	// in "chunks/0/", skipping everything outside it without reading it.
	base := prefix[:strings.LastIndex(prefix, "/")+1]
	if base != "" && checkKey(strings.TrimSuffix(base, "/")) != nil {
		return nil, nil // no valid key can have this prefix
	}
	if err := w.walk(base); err != nil {
		return nil, fmt.Errorf("filestore: list %q after %q: %w", prefix, after, err)
	}
	return w.out, nil
}

// walker carries one List call's state through the recursive walk.
type walker struct {
	s             *Store
	ctx           context.Context
	prefix, after string
	limit         int
	out           []object.Info
}

// full reports whether the walk has found limit objects.
func (w *walker) full() bool { return w.limit > 0 && len(w.out) >= w.limit }

// dirEntry is a directory entry with the name it sorts by in key order.
type dirEntry struct {
	sortName string // name, plus "/" for directories
	entry    fs.DirEntry
}

// walk visits the directory holding keys that start with rel ("" or ending
// in "/"), in key order, until the walk is full.
func (w *walker) walk(rel string) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	entries, err := w.readDir(rel)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if w.full() {
			return nil
		}
		key := rel + e.sortName
		if !w.mayHold(key) {
			continue
		}
		if e.entry.IsDir() {
			err = w.walk(key)
		} else {
			err = w.add(key, e.entry)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// readDir reads one directory and sorts it in key order. A missing
// directory is empty; temporary files and non-regular files are dropped.
func (w *walker) readDir(rel string) ([]dirEntry, error) {
	des, err := os.ReadDir(filepath.Join(w.s.root, filepath.FromSlash(rel)))
	if err != nil {
		if isAbsent(err) {
			return nil, nil
		}
		return nil, err
	}
	entries := make([]dirEntry, 0, len(des))
	for _, de := range des {
		name := de.Name()
		switch {
		case strings.HasPrefix(name, tmpPrefix):
		case de.IsDir():
			entries = append(entries, dirEntry{name + "/", de})
		case de.Type().IsRegular():
			entries = append(entries, dirEntry{name, de})
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].sortName < entries[j].sortName })
	return entries, nil
}

// mayHold reports whether key (a file key, or a directory key ending in
// "/") is, or may contain, keys matching prefix and sorting after after.
func (w *walker) mayHold(key string) bool {
	if !strings.HasPrefix(key, w.prefix) && !strings.HasPrefix(w.prefix, key) {
		return false
	}
	if !strings.HasSuffix(key, "/") {
		return key > w.after
	}
	// Every key under directory key starts with key and is longer. When
	// after is at least as long, some such key sorts after it iff key is
	// not below after's first len(key) bytes (equal: after lies inside).
	// When after is shorter, they all sort after it iff key does.
	if len(w.after) >= len(key) {
		return key >= w.after[:len(key)]
	}
	return key > w.after
}

// add appends a file to the result if it still exists.
func (w *walker) add(key string, de fs.DirEntry) error {
	if !strings.HasPrefix(key, w.prefix) || key <= w.after {
		return nil
	}
	fi, err := de.Info()
	if err != nil {
		if isAbsent(err) {
			return nil // deleted since readdir
		}
		return err
	}
	w.out = append(w.out, object.Info{Key: key, Size: fi.Size(), ModTime: fi.ModTime()})
	return nil
}
