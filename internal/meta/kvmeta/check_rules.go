package kvmeta

import (
	"slices"

	"shoal/internal/meta"
)

// checkEntries validates each entry and counts, per inode, its links, its
// subdirectories and the directories holding it.
func (c *checker) checkEntries() (links, subdirs map[meta.Ino]uint32, parents map[meta.Ino][]meta.Ino) {
	links, subdirs, parents = map[meta.Ino]uint32{}, map[meta.Ino]uint32{}, map[meta.Ino][]meta.Ino{}
	for _, en := range c.vs.entries {
		c.report.Entries++
		p, ok := c.vs.attrs[en.parent]
		if !ok || p.Type != meta.TypeDir {
			c.problem(deleteEntry(en), "entry %d/%q: parent is not a directory", en.parent, en.name)
			continue
		}
		a, ok := c.vs.attrs[en.ino]
		if !ok {
			c.problem(deleteEntry(en), "entry %d/%q: inode %d missing", en.parent, en.name, en.ino)
			continue
		}
		if a.Type != en.typ {
			c.problem(func(t *txn) error {
				t.tx.Set(dentryKey(en.parent, en.name), encodeDentry(en.ino, a.Type))
				return nil
			}, "entry %d/%q: type %d, inode has %d", en.parent, en.name, en.typ, a.Type)
		}
		links[en.ino]++
		parents[en.ino] = append(parents[en.ino], en.parent)
		if a.Type == meta.TypeDir {
			subdirs[en.parent]++
		}
	}
	return links, subdirs, parents
}

func deleteEntry(en entry) func(t *txn) error {
	return func(t *txn) error {
		t.tx.Delete(dentryKey(en.parent, en.name))
		return nil
	}
}

// checkInodes compares each inode with what the entries say.
func (c *checker) checkInodes(links, subdirs map[meta.Ino]uint32, parents map[meta.Ino][]meta.Ino) {
	inos := make([]meta.Ino, 0, len(c.vs.attrs))
	for ino := range c.vs.attrs {
		inos = append(inos, ino)
	}
	slices.Sort(inos)
	for _, ino := range inos {
		a := c.vs.attrs[ino]
		c.report.Inodes++
		switch a.Type {
		case meta.TypeDir:
			c.report.Dirs++
			c.checkDir(ino, a, subdirs[ino], parents[ino])
		default:
			if a.Type == meta.TypeFile {
				c.report.Files++
			}
			c.checkNonDir(ino, a, links[ino])
		}
	}
	for ino := range c.vs.orphans {
		if _, ok := c.vs.attrs[ino]; !ok {
			c.problem(func(t *txn) error { return t.unmarkOrphan(ino) }, "orphan mark for missing inode %d", ino)
		}
	}
}

func (c *checker) checkDir(ino meta.Ino, a meta.Attr, subdirs uint32, parents []meta.Ino) {
	if want := 2 + subdirs; a.Nlink != want {
		c.problem(setAttr(ino, func(a *meta.Attr) { a.Nlink = want }), "directory %d: nlink %d, want %d", ino, a.Nlink, want)
	}
	if ino == meta.RootIno {
		return
	}
	switch len(parents) {
	case 0:
		c.problem(nil, "directory %d is not reachable", ino)
	case 1:
		if p := parents[0]; a.Parent != p {
			c.problem(setAttr(ino, func(a *meta.Attr) { a.Parent = p }), "directory %d: parent %d, entry in %d", ino, a.Parent, p)
		}
	default:
		c.problem(nil, "directory %d has %d entries", ino, len(parents))
	}
}

func (c *checker) checkNonDir(ino meta.Ino, a meta.Attr, links uint32) {
	_, orphan := c.vs.orphans[ino]
	switch {
	case links == 0 && a.Type != meta.TypeFile:
		c.problem(func(t *txn) error {
			at, err := t.attr(ino)
			if err != nil {
				return err
			}
			return t.deleteInode(ino, at)
		}, "inode %d (type %d) is not reachable", ino, a.Type)
	case links == 0 && (a.Nlink != 0 || !orphan):
		c.problem(func(t *txn) error {
			t.markOrphan(ino)
			return setAttr(ino, func(a *meta.Attr) { a.Nlink = 0 })(t)
		}, "file %d has no entries but nlink %d, orphan mark %v", ino, a.Nlink, orphan)
	case links > 0 && a.Nlink != links:
		c.problem(setAttr(ino, func(a *meta.Attr) { a.Nlink = links }), "inode %d: nlink %d, %d entries", ino, a.Nlink, links)
	}
	if links > 0 && orphan {
		c.problem(func(t *txn) error { return t.unmarkOrphan(ino) }, "inode %d has entries and an orphan mark", ino)
	}
	if a.Type == meta.TypeFile && len(c.vs.chunks[ino]) == 0 {
		c.checkAlloc(ino, a, 0)
	}
	if a.Type == meta.TypeSymlink && !c.vs.symlinks[ino] {
		c.problem(nil, "symlink %d has no target", ino)
	}
}

// setAttr returns a fix that changes one inode's attributes.
func setAttr(ino meta.Ino, change func(a *meta.Attr)) func(t *txn) error {
	return func(t *txn) error {
		a, err := t.attr(ino)
		if err != nil {
			return err
		}
		change(a)
		t.touch(ino)
		return nil
	}
}

// checkSlices recounts references from the chunk records.
func (c *checker) checkSlices() {
	counts := map[meta.SliceID]int64{}
	for ino, chunks := range c.vs.chunks {
		a, ok := c.vs.attrs[ino]
		if !ok || a.Type != meta.TypeFile {
			c.problem(func(t *txn) error { return t.deleteChunks(ino, 0, noEnd) }, "chunks of missing or non-file inode %d", ino)
			continue
		}
		var visible uint64
		for _, ch := range chunks {
			visible += visibleBytes(ch.slices)
			for _, s := range ch.slices {
				if s.ID != 0 {
					counts[s.ID]++
				}
			}
		}
		c.checkAlloc(ino, a, visible)
	}
	c.report.Slices = uint64(len(counts))
	for id, n := range counts {
		c.checkRefs(id, n)
	}
	for id := range c.vs.refs {
		if counts[id] == 0 {
			c.problem(func(t *txn) error { t.tx.Delete(sliceKey(kindRefs, id)); return nil },
				"slice %d has a reference count but no records (its objects are garbage)", id)
		}
	}
}

// checkAlloc compares a file's allocated bytes with its chunks' data
// (checkNonDir covers files without chunks).
func (c *checker) checkAlloc(ino meta.Ino, a meta.Attr, visible uint64) {
	if a.Alloc != visible {
		c.problem(setAttr(ino, func(a *meta.Attr) { a.Alloc = visible }),
			"file %d: %d bytes allocated, chunks show %d", ino, a.Alloc, visible)
	}
}

func (c *checker) checkRefs(id meta.SliceID, n int64) {
	stored, ok := c.vs.refs[id]
	if !ok {
		stored = 1
	}
	if stored != n {
		c.problem(func(t *txn) error {
			if n == 1 {
				t.tx.Delete(sliceKey(kindRefs, id))
			} else {
				t.tx.Set(sliceKey(kindRefs, id), encodeInt(n))
			}
			return nil
		}, "slice %d: reference count %d, %d records", id, stored, n)
	}
	if c.vs.freed[id] {
		c.problem(func(t *txn) error { t.tx.Delete(sliceKey(kindFreed, id)); return nil },
			"slice %d is referenced but listed as freed", id)
	}
}

// checkXattrs checks that every inode with xattrs exists and is flagged
// as having them (deleting it would otherwise leave them behind).
func (c *checker) checkXattrs() {
	for ino := range c.vs.xattrs {
		if _, ok := c.vs.attrs[ino]; !ok {
			c.problem(func(t *txn) error { return t.deleteXattrs(ino) }, "xattrs of missing inode %d", ino)
			continue
		}
		if c.vs.flags[ino]&flagXattrs == 0 {
			c.problem(func(t *txn) error {
				if _, err := t.attr(ino); err != nil {
					return err
				}
				t.flags[ino] |= flagXattrs
				t.touch(ino)
				return nil
			}, "inode %d has xattrs but no xattr flag", ino)
		}
	}
}

// checkSessions validates the session indexes and lock records.
func (c *checker) checkSessions() {
	for _, si := range c.vs.orphanIndex {
		if id, ok := c.vs.orphans[si.ino]; !ok || id != si.session {
			c.problem(func(t *txn) error {
				t.tx.Delete(sessionIndexKey(kindSessionOrphan, si.session, si.ino))
				return nil
			}, "session %d lists inode %d as its orphan, but it is not", si.session, si.ino)
		}
	}
	for _, si := range c.vs.lockIndex {
		if si.session != 0 && !c.vs.sessions[si.session] {
			c.problem(func(t *txn) error { return t.dropSessionLocks(si.session, si.ino) },
				"inode %d: locks of ended session %d", si.ino, si.session)
		}
	}
	for ino := range c.vs.lockInos {
		if _, ok := c.vs.attrs[ino]; !ok {
			c.problem(func(t *txn) error { return t.dropAllLocks(ino) }, "lock records of missing inode %d", ino)
		}
	}
}

// checkCounters recounts usage.
func (c *checker) checkCounters() {
	var space, files int64
	for ino, a := range c.vs.attrs {
		if c.vs.flags[ino]&flagFrozen != 0 {
			continue // snapshots are not counted (snapshot.go)
		}
		space += spaceOf(&a)
		files++
	}
	if space != c.vs.space || files != c.vs.files {
		c.problem(func(t *txn) error {
			// Runs last: earlier fixes' usage deltas are folded in here.
			t.tx.Set(counterKey(counterUsedSpace), encodeInt(space+t.space))
			t.tx.Set(counterKey(counterUsedInodes), encodeInt(files+t.files))
			t.space, t.files = 0, 0
			return nil
		}, "usage counters: %d bytes %d inodes, recount %d bytes %d inodes", c.vs.space, c.vs.files, space, files)
	}
}

// checkOpens validates the open records ('H', see open.go): each is of
// a live session and an existing inode; and an orphan is held by someone,
// either the live session that made it or a live session's open record.
// An orphan whose maker ended and which no live session holds open would
// never be purged (a client crashed half-way through letting go of it):
// it is purged.
func (c *checker) checkOpens() {
	held := map[meta.Ino]bool{}
	for _, si := range c.vs.opens {
		if _, exists := c.vs.attrs[si.ino]; !exists || !c.vs.sessions[si.session] {
			c.problem(func(t *txn) error { t.dropOpen(si.ino, si.session); return nil },
				"inode %d: open record of session %d, which is gone", si.ino, si.session)
			continue
		}
		held[si.ino] = true
	}
	for ino, maker := range c.vs.orphans {
		if maker == 0 || c.vs.sessions[maker] || held[ino] {
			continue
		}
		if _, ok := c.vs.attrs[ino]; !ok {
			continue // checkInodes reports it
		}
		c.problem(func(t *txn) error { return t.purgeUnused(ino, 0) },
			"orphan %d: its session %d ended and no live session holds it open", ino, maker)
	}
}
