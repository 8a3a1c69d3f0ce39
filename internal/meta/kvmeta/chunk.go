package kvmeta

import (
	"context"
	"fmt"
	"slices"
	"syscall"

	"shoal/internal/meta"
)

// Chunks and slice references.
//
// A chunk's slice records, oldest first, live under its base key
// C ino index and, on volumes of format version 2 or later, under appended
// keys C ino index seq: a commit of new records writes one small appended
// key instead of rewriting the whole list, which for a VM image taking
// random 4 KiB writes holds thousands of records (every commit rewrote
// them all: megabytes of database writes per second). The list is the
// base key's records followed by each appended key's, in key order.
// Rewrites of the list (compaction, truncate, clone) fold it back into as
// few keys as it takes, and so does the commit that would pass that
// number by maxChunkKeys, so a read scans a bounded number of keys.
//
// On version 2 volumes no key holds more than chunkKeyRecords records: a
// long list is the base key and appended keys of at most that many each.
// SQLite keeps a row of up to about 1 KiB in its B-tree page and the rest
// in overflow pages, and a WITHOUT ROWID table compares a key with such a
// row only after reading all of it. A list of thousands of records in one
// row (a VM image after random writes) ended up as a divider in interior
// pages, and every lookup of any key then read hundreds of KiB: a Getattr
// went from 3 to 20 µs, and O_DIRECT reads, which check the attributes
// each time, lost two thirds of their speed. Version 1 volumes keep one
// key per list, as the binaries that write them expect.
//
// Every record with a non-zero ID holds one reference to its slice. A
// slice's reference count is stored under 'K' only while it is above one:
// a fresh slice committed by WriteChunk holds its single reference
// implicitly, so a plain write costs no extra key. When the last reference
// goes, the slice is listed under 'L' (with its size) until the data layer
// has deleted its objects (FreedSlices, ForgetFreed).

// appendedChunksVersion is the first format version with appended chunk
// keys.
const appendedChunksVersion = 2

// maxChunkKeys bounds the keys of one chunk beyond the fewest its list
// needs (minChunkKeys): the commit that would pass it folds the list
// (rewriting it once per maxChunkKeys commits instead of at every one).
const maxChunkKeys = 64

// chunkKeyRecords is the most records one chunk key holds on version 2
// volumes: 768 bytes of value, so a row stays inside its B-tree page.
const chunkKeyRecords = 32

// minChunkKeys is the number of keys a list of n records is folded into.
func minChunkKeys(n int) int { return max(1, (n+chunkKeyRecords-1)/chunkKeyRecords) }

// ReadChunk reads the inode (for a missing one's ENOENT and the chunk
// generation) and one chunk's list, from the chunk cache when it holds it
// (then the attributes are its one read, known ahead).
func (e *Engine) ReadChunk(ctx context.Context, ino meta.Ino, index uint32) ([]meta.Slice, error) {
	var out []meta.Slice
	fn := func(t *txn) error {
		if _, err := t.attr(ino); err != nil {
			return err
		}
		var err error
		out, err = t.chunk(ino, index)
		return err
	}
	var err error
	if e.chunks.holds(chunkRef{ino, index}) {
		// Likely cached at the generation the attributes give: the
		// attributes are the one read (kv.ViewAhead: one request on
		// PostgreSQL); if not, fn's Scan runs it again as a plain view.
		err = e.viewAhead(ctx, nil, [][]byte{attrKey(ino)}, fn)
	} else {
		err = e.view(ctx, fn)
	}
	return out, wrap(err, "read chunk %d/%d", ino, index)
}

// chunk returns a chunk's slice list (nil if never written) and remembers
// its keys for setChunk and appendChunk. With the chunk cache on and the
// inode's attr read, a list cached at the generation read is used instead
// of the keys; a list read from the keys is cached (see chunkcache.go)
// once the transaction has committed (readList says why).
func (t *txn) chunk(ino meta.Ino, index uint32) ([]meta.Slice, error) {
	return t.chunkList(ino, index, false)
}

// appendableChunk is chunk for a caller that only appends records to the
// list it gets and hands the result to appendChunk: it may get the cached
// list itself, claimed (see chunkcache.go), rather than a copy.
func (t *txn) appendableChunk(ino meta.Ino, index uint32) ([]meta.Slice, error) {
	return t.chunkList(ino, index, true)
}

// cacheable says whether ino's chunk lists may come from the cache: the
// transaction read its attributes (their generation) and has not bumped it.
func (t *txn) cacheable(ino meta.Ino) bool {
	_, known := t.attrs[ino]
	return t.cache != nil && known && !t.bumped[ino]
}

func (t *txn) chunkList(ino meta.Ino, index uint32, appendOnly bool) ([]meta.Slice, error) {
	ref := chunkRef{ino, index}
	cacheable := t.cacheable(ino)
	if r, ok := t.readLists[ref]; ok && cacheable && r.gen == t.gens[ino] {
		t.rememberKeys(ref, slices.Clone(r.keys))
		return append(make([]meta.Slice, 0, len(r.list)+appendRoom), r.list...), nil
	}
	if cacheable {
		if ss, keys, painted, claimed, ok := t.cache.get(ref, t.gens[ino], appendOnly); ok {
			if claimed {
				t.claims = append(t.claims, claim{ref, ss})
			}
			t.rememberKeys(ref, keys)
			t.rememberPainting(ref, painted)
			return ss, nil
		}
	}
	ss, keys, err := t.readChunk(ino, index)
	if err != nil {
		return nil, err
	}
	t.rememberKeys(ref, keys)
	if cacheable {
		if t.readLists == nil {
			t.readLists = make(map[chunkRef]readList)
		}
		t.readLists[ref] = readList{t.gens[ino], slices.Clone(ss), slices.Clone(keys)}
	}
	return ss, nil
}

// claim is a cached list a transaction appends to in place.
type claim struct {
	ref  chunkRef
	list []meta.Slice // as claimed
}

// releaseClaims gives back the transaction's claims, committed or not.
func (t *txn) releaseClaims() {
	for _, c := range t.claims {
		t.cache.release(c.ref, c.list)
	}
	t.claims = nil
}

// rememberPainting keeps the painting of a chunk's list as read (nil:
// unknown) for the commit's allocated-bytes count.
func (t *txn) rememberPainting(ref chunkRef, painted *painting) {
	if painted == nil {
		delete(t.paintings, ref)
		return
	}
	if t.paintings == nil {
		t.paintings = make(map[chunkRef]*painting)
	}
	t.paintings[ref] = painted
}

func (t *txn) rememberKeys(ref chunkRef, keys [][]byte) {
	if t.chunkKeys == nil {
		t.chunkKeys = make(map[chunkRef][][]byte)
	}
	t.chunkKeys[ref] = keys
}

// readChunk reads a chunk's keys: its list and the keys, in order.
func (t *txn) readChunk(ino meta.Ino, index uint32) ([]meta.Slice, [][]byte, error) {
	var ss []meta.Slice
	var keys [][]byte
	var derr error
	err := t.tx.Scan(chunkKey(ino, index), nil, 0, func(key, value []byte) bool {
		part, err := decodeChunkValue(key, value)
		if err != nil {
			derr = err
			return false
		}
		ss = append(ss, part...)
		keys = append(keys, slices.Clone(key))
		return true
	})
	if err = firstErr(err, derr); err != nil {
		return nil, nil, err
	}
	return ss, keys, nil
}

// wroteChunk notes that this transaction changed chunk ref to list (nil:
// deleted): the inode's generation goes up, and after the commit the
// cache holds list (a copy, unless the list is the transaction's own:
// see ownList).
func (t *txn) wroteChunk(ref chunkRef, list []meta.Slice) {
	if _, err := t.attr(ref.ino); err != nil {
		return // the inode is gone (or going): nothing to keep
	}
	if t.wrote == nil {
		t.wrote = make(map[chunkRef][]meta.Slice)
		t.bumped = make(map[meta.Ino]bool)
	}
	t.wrote[ref] = list
	delete(t.paintings, ref) // writeSlices sets the new one after this
	if !t.bumped[ref.ino] {
		t.bumped[ref.ino] = true
		t.touch(ref.ino) // the attr record carries the new generation
	}
}

// publishChunks updates the chunk cache after a commit: each inode whose
// chunks changed moves to its new generation, with the lists written.
func (t *txn) publishChunks() {
	if t.cache == nil {
		return
	}
	// First what it read: a read chunk of an inode whose other chunks
	// it wrote moves to the new generation with the others (advance).
	t.publishReads()
	for ino := range t.dropped {
		t.cache.forget(ino)
	}
	for ino := range t.bumped {
		if _, ok := t.attrs[ino]; !ok {
			continue // dropped in this transaction
		}
		t.cache.advance(ino, t.gens[ino], t.gens[ino]+1, t.wrote)
	}
	for ref, list := range t.wrote {
		if _, ok := t.attrs[ref.ino]; ok {
			if !t.owned[ref] {
				list = slices.Clone(list)
			}
			t.cache.put(ref, t.gens[ref.ino]+1, list, slices.Clone(t.chunkKeys[ref]), t.paintings[ref])
		}
	}
}

// ownList notes that the list written to chunk ref is the transaction's
// alone (appended to by writeSlices, which keeps no other reference), so
// the cache takes it without a copy.
func (t *txn) ownList(ref chunkRef) {
	if t.owned == nil {
		t.owned = make(map[chunkRef]bool)
	}
	t.owned[ref] = true
}

// decodeChunkValue decodes the records under one chunk key.
func decodeChunkValue(key, value []byte) ([]meta.Slice, error) {
	if chunkKeyOrder(key) < 0 {
		return nil, fmt.Errorf("bad chunk key %x", key)
	}
	ss, err := decodeSlices(value)
	if err != nil {
		return nil, fmt.Errorf("chunk %d/%d: %w", be.Uint64(key[1:]), chunkIndex(key), err)
	}
	return ss, nil
}

// keysOf returns the keys of a chunk, from the txn's read of it or by
// reading it now.
func (t *txn) keysOf(ino meta.Ino, index uint32) ([][]byte, error) {
	if keys, ok := t.chunkKeys[chunkRef{ino, index}]; ok {
		return keys, nil
	}
	if _, err := t.chunk(ino, index); err != nil {
		return nil, err
	}
	return t.chunkKeys[chunkRef{ino, index}], nil
}

// setChunk replaces a chunk's slice list (deleting its keys when ss is
// empty): the base key holds all of ss on version 1 volumes; on later
// ones the base key and appended keys 0, 1... hold chunkKeyRecords
// records each. Other appended keys are deleted.
func (t *txn) setChunk(ino meta.Ino, index uint32, ss []meta.Slice) error {
	keys, err := t.keysOf(ino, index)
	if err != nil {
		return err
	}
	ref := chunkRef{ino, index}
	per := len(ss)
	if t.cache != nil {
		per = chunkKeyRecords
	}
	var written [][]byte
	for i := 0; i < len(ss); i += per {
		k := chunkKey(ino, index)
		if i > 0 {
			k = appendedKey(ino, index, uint32(i/per-1))
		}
		t.tx.Set(k, encodeSlices(ss[i:min(len(ss), i+per)]))
		written = append(written, k)
	}
	for _, k := range keys {
		if order := chunkKeyOrder(k); order >= int64(len(written)) {
			t.tx.Delete(k)
		}
	}
	t.chunkKeys[ref] = written
	if len(ss) == 0 {
		t.wroteChunk(ref, nil)
		return nil
	}
	t.wroteChunk(ref, ss)
	return nil
}

// appendChunk adds the records added to a chunk whose whole new list is
// ss: under new appended keys (chunkKeyRecords records each) where the
// volume has them, the chunk has a base key, and the keys stay within
// maxChunkKeys of the fewest the list needs; else by rewriting the list.
func (t *txn) appendChunk(ino meta.Ino, index uint32, ss, added []meta.Slice) error {
	keys, err := t.keysOf(ino, index)
	if err != nil {
		return err
	}
	more := (len(added) + chunkKeyRecords - 1) / chunkKeyRecords
	if t.cache == nil || len(keys) == 0 || len(keys[0]) != chunkKeyLen || len(keys)+more > minChunkKeys(len(ss))+maxChunkKeys {
		return t.setChunk(ino, index, ss)
	}
	seq := uint32(chunkKeyOrder(keys[len(keys)-1])) // the last one's seq + 1, or 0 after the base key
	for i := 0; i < len(added); i += chunkKeyRecords {
		k := appendedKey(ino, index, seq)
		t.tx.Set(k, encodeSlices(added[i:min(len(added), i+chunkKeyRecords)]))
		keys = append(keys, k)
		seq++
	}
	ref := chunkRef{ino, index}
	t.chunkKeys[ref] = keys
	t.wroteChunk(ref, ss)
	return nil
}

// file returns the attributes of a regular file: EISDIR for a directory,
// EINVAL for other types.
func (t *txn) file(ino meta.Ino) (*meta.Attr, error) {
	a, err := t.attr(ino)
	switch {
	case err != nil:
		return nil, err
	case a.Type == meta.TypeDir:
		return nil, syscall.EISDIR
	case a.Type != meta.TypeFile:
		return nil, syscall.EINVAL
	}
	return a, nil
}

// WriteChunk appends s to the chunk: read attr and chunk, write both.
// A write by a non-root caller clears setuid (and setgid with group exec),
// as write(2) does.
//
// Committing a slice that the chunk already holds is a no-op for the list,
// so a caller may retry a commit whose outcome it could not learn (a
// connection lost during COMMIT) without adding a record that holds no
// reference of its own.
func (e *Engine) WriteChunk(ctx context.Context, ino meta.Ino, index uint32, s meta.Slice) (meta.CommitResult, error) {
	res, err := e.writeSlices(ctx, ino, []meta.SliceWrite{{Index: index, S: s}})
	return res, wrap(err, "write chunk %d/%d %v", ino, index, s)
}

// WriteSlices is WriteChunk for several records in one transaction; a
// Shared record takes a reference of its own (see meta.SliceWrite). The
// no-op rule for a record the chunk already holds applies per record, so
// a batch whose commit outcome was unknown may be sent again, alone or as
// the prefix of a longer batch: records are checked in order until the
// first one not yet held, and the rest (committed after it, so absent
// too) are appended without the scan, which costs a pass over the list.
func (e *Engine) WriteSlices(ctx context.Context, ino meta.Ino, ws []meta.SliceWrite) (meta.CommitResult, error) {
	res, err := e.writeSlices(ctx, ino, ws)
	return res, wrap(err, "write %d slices of inode %d", len(ws), ino)
}

var _ meta.CommitGater = (*Engine)(nil)

// AwaitsCommitGate implements meta.CommitGater: WriteSlices awaits the
// context's commit gate as the last step of its transaction, before the
// store commits it.
func (e *Engine) AwaitsCommitGate() bool { return true }

func (e *Engine) writeSlices(ctx context.Context, ino meta.Ino, ws []meta.SliceWrite) (meta.CommitResult, error) {
	var res meta.CommitResult
	for _, w := range ws {
		if uint64(w.S.Pos)+uint64(w.S.Len) > meta.ChunkSize || w.S.Len == 0 {
			return res, fmt.Errorf("slice %v in chunk %d: %w", w.S, w.Index, syscall.EINVAL)
		}
	}
	err := e.update(ctx, func(t *txn) error {
		a, err := t.file(ino)
		if err != nil {
			return err
		}
		lists := map[uint32][]meta.Slice{}
		added := map[uint32][]meta.Slice{} // records appended, per chunk
		refs := map[meta.SliceID]int64{}
		var delta int64
		resent := true // still inside a prefix committed before
		for _, w := range ws {
			ss, ok := lists[w.Index]
			if !ok {
				if ss, err = t.appendableChunk(ino, w.Index); err != nil {
					return err
				}
			}
			if resent && w.S.ID != 0 && slices.Contains(ss, w.S) {
				lists[w.Index] = ss
				continue
			}
			resent = false
			ss = append(ss, w.S)
			added[w.Index] = append(added[w.Index], w.S)
			if w.Shared && w.S.ID != 0 {
				refs[w.S.ID]++
			}
			lists[w.Index] = ss
			if end := uint64(w.Index)*meta.ChunkSize + uint64(w.S.Pos+w.S.Len); end > a.Length {
				t.setLength(a, end)
			}
		}
		if err := t.increfAll(refs); err != nil {
			return err
		}
		res.Counts = make(map[uint32]int, len(lists))
		for index, ss := range lists {
			res.Counts[index] = len(ss)
			if len(added[index]) == 0 {
				continue // all sent before
			}
			ref := chunkRef{ino, index}
			d, painted := t.addedAlloc(ref, ss, len(added[index]))
			delta += d
			if err := t.appendChunk(ino, index, ss, added[index]); err != nil {
				return err
			}
			t.ownList(ref)
			t.rememberPainting(ref, painted)
		}
		if err := t.adjustAlloc(ino, delta); err != nil {
			return err
		}
		t.modified(a)
		t.touch(ino)
		res.Attr = *a
		if len(ws) > 0 {
			res.SliceCount = res.Counts[ws[len(ws)-1].Index]
		}
		// Last: the blocks may still be on their way (meta/gate.go).
		return meta.AwaitCommitGate(ctx)
	})
	return res, err
}

// modified sets mtime and ctime and drops privileges a non-root writer
// must not keep.
func (t *txn) modified(a *meta.Attr) {
	a.Mtime, a.Ctime = t.now, t.now
	if !t.cred.Trusted && t.cred.Uid != 0 {
		a.Mode &^= meta.ModeSetuid
		if a.Mode&0o010 != 0 {
			a.Mode &^= meta.ModeSetgid
		}
	}
}

// CompactChunk swaps the prefix old of a chunk's list for replacement.
// Reference counting: every record of old gives up its reference; every
// record of replacement takes one, except that the first record of a slice
// id not found in old uses the implicit reference of a fresh slice (the
// compactor writes a new slice from NewSliceID). On ErrConflict nothing
// changes and the caller deletes its new slice's objects.
func (e *Engine) CompactChunk(ctx context.Context, ino meta.Ino, index uint32, old, replacement []meta.Slice) error {
	err := e.update(ctx, func(t *txn) error {
		if _, err := t.attr(ino); err != nil {
			return err
		}
		ss, err := t.chunk(ino, index)
		if err != nil {
			return err
		}
		if len(old) == 0 || len(ss) < len(old) || !slices.Equal(ss[:len(old)], old) {
			return meta.ErrConflict
		}
		merged := append(slices.Clone(replacement), ss[len(old):]...)
		if err := t.takeRefs(replacement, old); err != nil {
			return err
		}
		if err := t.release(old); err != nil {
			return err
		}
		// Compaction writes short holes out as zeros (data/compact.go),
		// which makes them data: the count follows.
		return t.setChunkAlloc(ino, index, ss, merged)
	})
	return wrap(err, "compact chunk %d/%d", ino, index)
}

// takeRefs adds the references the records of added hold, except the one
// implicit reference of each fresh slice (an id absent from existing).
func (t *txn) takeRefs(added, existing []meta.Slice) error {
	counts := make(map[meta.SliceID]int64)
	for _, s := range added {
		if s.ID != 0 {
			counts[s.ID]++
		}
	}
	for id := range counts {
		if !slices.ContainsFunc(existing, func(s meta.Slice) bool { return s.ID == id }) {
			counts[id]-- // the first record holds the implicit reference
		}
	}
	return t.increfAll(counts)
}

// deleteChunks deletes ino's chunks with index in [from, to), releasing
// their references. to may be noEnd.
func (t *txn) deleteChunks(ino meta.Ino, from uint32, to uint64) error {
	return t.deleteChunksCounting(ino, from, to, nil)
}

// deleteChunksCounting is deleteChunks that also calls count with each
// deleted chunk's slice list (to account allocated bytes).
func (t *txn) deleteChunksCounting(ino meta.Ino, from uint32, to uint64, count func([]meta.Slice)) error {
	if uint64(from) >= to {
		return nil
	}
	var keys [][]byte
	var indexes []uint32
	var records []meta.Slice
	collect := func(index uint32, ks [][]byte, ss []meta.Slice) bool {
		if uint64(index) >= to {
			return false
		}
		keys = append(keys, ks...)
		indexes = append(indexes, index)
		records = append(records, ss...)
		if count != nil {
			count(ss)
		}
		return true
	}
	if !t.cachedChunks(ino, from, to, collect) {
		if err := t.scanChunks(ino, from, collect); err != nil {
			return err
		}
	}
	for _, k := range keys {
		t.tx.Delete(k)
	}
	for _, index := range indexes {
		ref := chunkRef{ino, index}
		t.rememberKeys(ref, nil)
		t.wroteChunk(ref, nil)
	}
	return t.release(records)
}

// cachedChunks calls fn, as scanChunks would, with every chunk of ino in
// [from, to) from the chunk cache, and reports true, when the cache holds
// all of them at the generation this transaction read; else it calls fn
// with nothing and reports false, and the caller scans. Every chunk index
// a file can have lies below its length: a write or clone that adds
// records extends the length to cover them, and a truncation deletes the
// chunks past the new end (deleteInode counts on the same for an empty
// file). So the indexes to find are those below the length, as read
// (the caller must not have lowered it in this transaction), and a chunk
// that was never written (a sparse file's hole) has no entry and makes
// the caller scan. The generation, which every change to any chunk key
// of the inode raises, is part of the attr record this transaction read
// and its commit checks: a change by another client after the read is a
// conflict. This spares the whole-file deletion of an unlink a range read
// and the reads of the chunks' keys (on Redis, four round trips and the
// WATCHes a range needs).
func (t *txn) cachedChunks(ino meta.Ino, from uint32, to uint64, fn func(index uint32, keys [][]byte, ss []meta.Slice) bool) bool {
	a, known := t.attrs[ino]
	if t.cache == nil || !known || t.bumped[ino] || a.Length == 0 {
		return false
	}
	last := min(to, (a.Length-1)/meta.ChunkSize+1) // one past the last index
	if uint64(from) >= last || last-uint64(from) > 16 {
		return false
	}
	type found struct {
		keys [][]byte
		ss   []meta.Slice
	}
	all := make([]found, 0, last-uint64(from))
	for i := uint64(from); i < last; i++ {
		ss, keys, _, _, ok := t.cache.get(chunkRef{ino, uint32(i)}, t.gens[ino], false)
		if !ok || len(keys) == 0 && len(ss) > 0 {
			return false // not cached, or records without their keys
		}
		all = append(all, found{keys, ss})
	}
	for i, c := range all {
		if len(c.keys) > 0 && !fn(from+uint32(i), c.keys, c.ss) {
			break
		}
	}
	return true
}

// scanChunks calls fn with each chunk of ino from index from on, in index
// order, with its keys and whole slice list, until fn returns false.
func (t *txn) scanChunks(ino meta.Ino, from uint32, fn func(index uint32, keys [][]byte, ss []meta.Slice) bool) error {
	var (
		index   uint32
		keys    [][]byte
		ss      []meta.Slice
		stopped bool
		derr    error
	)
	err := t.tx.Scan(inoKey(kindChunk, ino), chunkAfter(from), 0, func(key, value []byte) bool {
		part, err := decodeChunkValue(key, value)
		if err != nil {
			derr = err
			return false
		}
		if len(keys) > 0 && chunkIndex(key) != index {
			if !fn(index, keys, ss) {
				stopped = true
				return false
			}
			keys, ss = nil, nil
		}
		index = chunkIndex(key)
		keys = append(keys, slices.Clone(key))
		ss = append(ss, part...)
		return true
	})
	if err = firstErr(err, derr); err != nil {
		return err
	}
	if len(keys) > 0 && !stopped {
		fn(index, keys, ss)
	}
	return nil
}

// chunkAfter is the Scan "after" argument that starts at chunk index from:
// past chunk from-1's base key and every appended key of it.
func chunkAfter(from uint32) []byte {
	if from == 0 {
		return nil
	}
	return be.AppendUint32(be.AppendUint32(nil, from-1), 1<<32-1)
}

// FreedSlices lists slices whose last reference is gone, by ID, from the
// first after after.
func (e *Engine) FreedSlices(ctx context.Context, after meta.SliceID, limit int) ([]meta.Slice, error) {
	var from []byte
	if after != 0 {
		from = be.AppendUint64(nil, uint64(after))
	}
	var out []meta.Slice
	err := e.view(ctx, func(t *txn) error {
		out = out[:0]
		return t.tx.Scan([]byte{kindFreed}, from, limit, func(key, value []byte) bool {
			s := meta.Slice{ID: meta.SliceID(be.Uint64(key[1:]))}
			if len(value) >= 4 {
				s.Size = be.Uint32(value)
			}
			out = append(out, s)
			return true
		})
	})
	return out, wrap(err, "freed slices")
}

// ForgetFreed deletes freed-list entries.
func (e *Engine) ForgetFreed(ctx context.Context, ids []meta.SliceID) error {
	err := e.update(ctx, func(t *txn) error {
		for _, id := range ids {
			t.tx.Delete(sliceKey(kindFreed, id))
		}
		return nil
	})
	return wrap(err, "forget %d freed slices", len(ids))
}
