package kvmeta

import (
	"slices"
	"syscall"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

// dirLength is the Length a directory reports, as on most local file systems.
const dirLength = 4096

// attr returns ino's attributes, read once per transaction and cached, so
// that an inode touched twice in one operation (a rename within one
// directory) is changed in one place. ENOENT if absent.
func (t *txn) attr(ino meta.Ino) (*meta.Attr, error) {
	if a, ok := t.attrs[ino]; ok {
		return a, nil
	}
	raw, err := t.tx.Get(attrKey(ino))
	if err != nil {
		return nil, err
	}
	return t.keepAttr(ino, raw)
}

// keepAttr decodes ino's attr record raw, as read, into the cache.
func (t *txn) keepAttr(ino meta.Ino, raw []byte) (*meta.Attr, error) {
	a, err := attrOf(raw)
	if err != nil {
		return nil, err
	}
	t.attrs[ino] = &a
	if f := attrFlags(raw); f != 0 {
		t.flags[ino] = f
	}
	if g := attrGen(raw); g != 0 {
		t.gens[ino] = g
	}
	return &a, nil
}

// attrOf decodes an attr record as read: ENOENT if it is absent.
func attrOf(raw []byte) (meta.Attr, error) {
	if raw == nil {
		return meta.Attr{}, syscall.ENOENT
	}
	return decodeAttr(raw)
}

// dir returns the attributes of directory ino: ENOTDIR for another type.
func (t *txn) dir(ino meta.Ino) (*meta.Attr, error) {
	a, err := t.attr(ino)
	if err != nil {
		return nil, err
	}
	if a.Type != meta.TypeDir {
		return nil, syscall.ENOTDIR
	}
	return a, nil
}

// dirFor returns directory ino after checking that the caller may use it as
// mask says (MayExec to look up, MayWrite|MayExec to change entries).
func (t *txn) dirFor(ino meta.Ino, mask uint32) (*meta.Attr, error) {
	a, err := t.dir(ino)
	if err != nil {
		return nil, err
	}
	return a, t.access(ino, a, mask)
}

// touch marks ino's attributes changed; they are written at commit.
func (t *txn) touch(ino meta.Ino) {
	t.noteFrozen(ino)
	t.dirty[ino] = true
}

// touchDir sets a directory's mtime and ctime (an entry was added or
// removed) and marks it changed. With Options.DirMtimeWindow, a directory
// nothing else changed in (its link count, say: callers mark such changes
// with touch first) keeps times younger than the window, so that entry
// changes in one busy directory need not all write its attributes.
func (t *txn) touchDir(ino meta.Ino, a *meta.Attr) {
	t.noteFrozen(ino)
	if t.dirWindow > 0 && !t.dirty[ino] && t.now-a.Mtime < t.dirWindow && t.now >= a.Mtime {
		return
	}
	a.Mtime, a.Ctime = t.now, t.now
	t.touch(ino)
}

// put installs the attributes of a new inode.
func (t *txn) put(ino meta.Ino, a *meta.Attr) {
	t.attrs[ino] = a
	t.touch(ino)
}

// drop deletes ino's attributes.
func (t *txn) drop(ino meta.Ino) {
	t.noteFrozen(ino)
	delete(t.attrs, ino)
	delete(t.dirty, ino)
	delete(t.flags, ino)
	delete(t.bumped, ino)
	if t.dropped == nil {
		t.dropped = make(map[meta.Ino]bool)
	}
	t.dropped[ino] = true
	t.tx.Delete(attrKey(ino))
}

// flush writes the changed attributes.
func (t *txn) flush() {
	for ino := range t.dirty {
		gen := t.gens[ino]
		if t.bumped[ino] {
			gen++
		}
		t.tx.Set(attrKey(ino), encodeAttrRecord(t.attrs[ino], t.flags[ino], gen))
	}
}

// report tells w (if any) what the committed t wrote: the attributes of
// the inodes flush wrote and the inodes dropped.
func (t *txn) report(w *meta.Written) {
	if w == nil {
		return
	}
	for ino := range t.dirty {
		if a := t.attrs[ino]; a != nil {
			w.Wrote(ino, *a)
		}
	}
	for ino := range t.dropped {
		w.Dropped(ino)
	}
}

// prefetchAhead is prefetch on a kv.Prefetcher: the attributes of inos
// and of the entries' parents that are not cached yet, the entries, and
// the inode the first entry names (kv.PrefetchFollow), in one round trip.
func (t *txn) prefetchAhead(inos []meta.Ino, entries []dirEntry) error {
	var keys [][]byte
	for _, ino := range inos {
		if _, ok := t.attrs[ino]; !ok {
			keys = append(keys, attrKey(ino))
		}
	}
	for _, e := range entries {
		if _, ok := t.attrs[e.parent]; !ok {
			keys = append(keys, attrKey(e.parent))
		}
	}
	if len(entries) == 0 {
		if len(keys) == 0 {
			return nil
		}
		return kv.Prefetch(t.tx, keys...)
	}
	for _, e := range entries[1:] {
		keys = append(keys, dentryKey(e.parent, e.name))
	}
	return kv.PrefetchFollow(t.tx, followEntry(entries[0].parent, entries[0].name), keys...)
}

// prefetchEntry reads ahead, in one round trip on a kv.Prefetcher (and
// not at all elsewhere), what a lookup of parent/name reads: the
// directory's attributes, the entry and the attributes of the inode it
// names.
func (t *txn) prefetchEntry(parent meta.Ino, name string) error {
	return t.prefetchAhead(nil, []dirEntry{{parent, name}})
}

// followEntry names the attributes of the inode the entry parent/name
// points to: an entry's value begins with the inode number.
func followEntry(parent meta.Ino, name string) kv.Follow {
	return kv.Follow{From: dentryKey(parent, name), Prefix: []byte{kindAttr}, Off: 0, Len: 8}
}

// lookup returns the entry name in parent: ENOENT if absent. An entry
// prefetched (prefetch) is taken from there, once.
func (t *txn) lookup(parent meta.Ino, name string) (meta.Ino, meta.Type, error) {
	key := dentryKey(parent, name)
	raw, ok := t.prefetched[string(key)]
	if ok {
		delete(t.prefetched, string(key))
	} else {
		var err error
		if raw, err = t.tx.Get(key); err != nil {
			return 0, 0, err
		}
	}
	if raw == nil {
		return 0, 0, syscall.ENOENT
	}
	return decodeDentry(raw)
}

// isEmpty reports whether directory ino has no entries.
func (t *txn) isEmpty(ino meta.Ino) (bool, error) {
	empty := true
	err := t.tx.Scan(inoKey(kindDentry, ino), nil, 1, func(_, _ []byte) bool {
		empty = false
		return false
	})
	return empty, err
}

// spaceOf is the used space a file of length n accounts for: whole 4 KiB
// blocks, as du would show on a local file system.
func spaceOf(a *meta.Attr) int64 {
	if a.Type != meta.TypeFile {
		return 0
	}
	return int64((a.Length + 4095) &^ 4095)
}

// setLength changes a file's length and accounts the space difference.
func (t *txn) setLength(a *meta.Attr, n uint64) {
	before := spaceOf(a)
	a.Length = n
	t.space += spaceOf(a) - before
	t.charge(a.Parent, spaceOf(a)-before, 0)
}

// dirEntry names an entry: name in directory parent.
type dirEntry struct {
	parent meta.Ino
	name   string
}

// prefetch reads, in one round trip where the store can (kv.GetMany),
// the attributes of inos and of the entries' parents that are not cached
// yet, and the entries: an operation that changes entries begins with
// those reads (dirFor, lookup, attr), each of which would otherwise cost
// a round trip of its own on a networked store. Attributes go to the attr
// cache; an attr record found absent is left for attr to report. Entries
// are kept for the lookup that follows, which must come before any write
// of the same entry in the transaction.
//
// A store that keeps what it reads ahead itself (kv.Prefetcher: Redis)
// is asked through prefetchAhead instead, which also reads the attributes
// of the first entry's inode in the same round trip; a transaction that
// can follow an entry (kv.FollowGetter: sqlkv, one statement on
// PostgreSQL) reads them too (prefetchFollow).
func (t *txn) prefetch(inos []meta.Ino, entries ...dirEntry) error {
	if _, ok := t.tx.(kv.Prefetcher); ok {
		return t.prefetchAhead(inos, entries)
	}
	var keys [][]byte
	var attrInos []meta.Ino
	want := func(ino meta.Ino) {
		if _, ok := t.attrs[ino]; !ok && !slices.Contains(attrInos, ino) {
			attrInos = append(attrInos, ino)
			keys = append(keys, attrKey(ino))
		}
	}
	for _, ino := range inos {
		want(ino)
	}
	for _, e := range entries {
		want(e.parent)
	}
	nAttrs := len(keys)
	for _, e := range entries {
		keys = append(keys, dentryKey(e.parent, e.name))
	}
	var raws [][]byte
	var err error
	if _, ok := t.tx.(kv.FollowGetter); ok && len(entries) > 0 {
		// The attributes the first entry names, in the same round trip.
		if raws, err = t.prefetchFollow(keys, entries[0]); err != nil {
			return err
		}
	} else {
		if len(keys) < 2 {
			return nil // no round trip to save
		}
		if raws, err = kv.GetMany(t.tx, keys); err != nil {
			return err
		}
	}
	for i, ino := range attrInos {
		if raws[i] != nil {
			if _, err := t.keepAttr(ino, raws[i]); err != nil {
				return err
			}
		}
	}
	if t.prefetched == nil {
		t.prefetched = make(map[string][]byte, len(entries))
	}
	for i, k := range keys[nAttrs:] {
		t.prefetched[string(k)] = raws[nAttrs+i]
	}
	return nil
}

// prefetchFollow reads keys and the attributes of the inode entry e names
// in one round trip (kv.GetManyFollow), keeping those attributes unless
// cached already; it returns the values of keys.
func (t *txn) prefetchFollow(keys [][]byte, e dirEntry) ([][]byte, error) {
	f := followEntry(e.parent, e.name)
	raws, from, _, nextVal, err := kv.GetManyFollow(t.tx, &f, keys...)
	if err != nil || from == nil || nextVal == nil {
		return raws, err
	}
	ino, _, err := decodeDentry(from)
	if err != nil {
		return nil, err
	}
	if _, ok := t.attrs[ino]; !ok {
		if _, err := t.keepAttr(ino, nextVal); err != nil {
			return nil, err
		}
	}
	return raws, nil
}
