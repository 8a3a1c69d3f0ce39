package kvmeta

import (
	"context"

	"shoal/internal/meta/kv"
)

// restoredKind reports whether Restore writes keys of kind. The records of
// clients are not restored: a restored volume has no client, and a
// session copied from the dump would show as a dead mount (and block
// `fsck --repair`) until reclaimed, while its lock records would hold
// locks nobody owns, and its open records would keep files of no client
// alive. Orphans ('O') are restored; whoever restores purges
// them (volume.Adopt), since no handle on them survives a dump.
func restoredKind(kind byte) bool {
	switch kind {
	case kindSession, kindSessionOrphan, kindSessionLock, kindFlock, kindPlock, kindOpen:
		return false
	}
	return true
}

// restorableKey reports whether k has the shape its kind's keys have, so
// that a damaged or forged dump cannot put keys into the engine that the
// readers of that kind (fsck's scans, session reclaim) would misread.
// Exact lengths: attr, symlink, orphan, refs, freed, quota (9 bytes), open
// (17), chunk (13, or 17 with a sequence); dentries and xattrs carry a
// name after their 9 bytes; counters a name after their kind.
func restorableKey(k []byte) bool {
	switch k[0] {
	case kindAttr, kindSymlink, kindOrphan, kindRefs, kindFreed, kindQuota:
		return len(k) == 9
	case kindOpen:
		return len(k) == 17
	case kindChunk:
		return len(k) == 13 || len(k) == 17
	case kindDentry, kindXattr:
		return len(k) > 9
	case kindCounter:
		return len(k) > 1
	}
	return true
}

// SkipSliceIDs moves the slice id counter n ids forward, so that a volume
// loaded from a dump never names a block as its source names one when
// the two share a bucket (volume.Adopt). Ids this engine has reserved
// already are dropped.
func (e *Engine) SkipSliceIDs(ctx context.Context, n uint64) error {
	err := e.store.Txn(ctx, func(tx kv.Tx) error {
		raw, err := tx.Get(counterKey(counterNextSlice))
		if err != nil {
			return err
		}
		next := max(uint64(decodeInt(raw)), e.slices.first)
		tx.Set(counterKey(counterNextSlice), encodeInt(int64(next+n)))
		return nil
	})
	if err == nil {
		e.slices.forget()
	}
	return wrap(err, "skip %d slice ids", n)
}
