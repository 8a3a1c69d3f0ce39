package kvmeta

import (
	"slices"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

// Reference counts ('K' slice, stored only above 1; docs/format.md).
// Changes to many slices at once (a tree copy, a file's deletion) read
// their counts with kv.GetMany: one round trip per batch of keys where
// the store allows, rather than one per slice.

// increfAll adds refs[id] references to each slice id; each count must
// be at least 0.
func (t *txn) increfAll(refs map[meta.SliceID]int64) error {
	return t.addRefs(refs, nil)
}

// release drops the reference of every record in ss; a slice whose last
// reference goes is listed as freed.
func (t *txn) release(ss []meta.Slice) error {
	counts := make(map[meta.SliceID]int64)
	sizes := make(map[meta.SliceID]uint32)
	for _, s := range ss {
		if s.ID != 0 {
			counts[s.ID]--
			sizes[s.ID] = s.Size
		}
	}
	return t.addRefs(counts, sizes)
}

// addRefs adds delta[id] (which may be negative) to the reference count
// of each slice id. A count that drops to 0 or below deletes the slice's
// count and lists it as freed, of size sizes[id]; a count of 1 is stored
// as no key. Zero deltas are skipped.
func (t *txn) addRefs(delta map[meta.SliceID]int64, sizes map[meta.SliceID]uint32) error {
	ids := make([]meta.SliceID, 0, len(delta))
	for id, n := range delta {
		if n != 0 {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	keys := make([][]byte, len(ids))
	for i, id := range ids {
		keys[i] = sliceKey(kindRefs, id)
	}
	var raws [][]byte
	if len(keys) == 1 {
		raw, err := t.tx.Get(keys[0])
		if err != nil {
			return err
		}
		raws = [][]byte{raw}
	} else {
		var err error
		if raws, err = kv.GetMany(t.tx, keys); err != nil {
			return err
		}
	}
	for i, id := range ids {
		refs := int64(1)
		if raws[i] != nil {
			refs = decodeInt(raws[i])
		}
		switch refs += delta[id]; {
		case refs <= 0:
			t.tx.Delete(keys[i])
			t.tx.Set(sliceKey(kindFreed, id), be.AppendUint32(nil, sizes[id]))
		case refs == 1:
			t.tx.Delete(keys[i])
		default:
			t.tx.Set(keys[i], encodeInt(refs))
		}
	}
	return nil
}
