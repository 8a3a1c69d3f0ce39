package kvmeta

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
	"shoal/internal/meta/kv/memkv"
)

// rollbackFirst, while armed, runs every Txn's fn once more before the
// real attempt, failing that first run with a conflict at its first read
// after a delete and rolling it back, as PostgreSQL does with a
// serialization failure in mid-transaction: whatever the engine noted in
// memory during it must not change what the retry writes.
type rollbackFirst struct {
	kv.Store
	armed atomic.Bool
}

var errRolledBack = errors.New("rolled back")

func (r *rollbackFirst) Txn(ctx context.Context, fn func(kv.Tx) error) error {
	if r.armed.Load() {
		err := r.Store.Txn(ctx, func(tx kv.Tx) error {
			_ = fn(&conflictAfterDelete{Tx: tx})
			return errRolledBack
		})
		if err != errRolledBack {
			return err
		}
	}
	return r.Store.Txn(ctx, fn)
}

// conflictAfterDelete fails every read after the first Delete.
type conflictAfterDelete struct {
	kv.Tx
	deleted bool
}

func (c *conflictAfterDelete) Delete(key []byte) { c.deleted = true; c.Tx.Delete(key) }

func (c *conflictAfterDelete) Get(key []byte) ([]byte, error) {
	if c.deleted {
		return nil, kv.ErrConflict
	}
	return c.Tx.Get(key)
}

func (c *conflictAfterDelete) Scan(prefix, after []byte, limit int, fn func(k, v []byte) bool) error {
	if c.deleted {
		return kv.ErrConflict
	}
	return c.Tx.Scan(prefix, after, limit, fn)
}

// TestUnlinkRetriedDropsOwnRecord: the unlink of a file this client
// created and released, whose transaction ran twice, leaves no open
// record of this session behind (fsck: "open record of session N" of an
// inode that is gone, until the next flush of releases).
func TestUnlinkRetriedDropsOwnRecord(t *testing.T) {
	for _, armed := range []bool{false, true} {
		t.Run(map[bool]string{false: "once", true: "retried"}[armed], func(t *testing.T) { unlinkOwnReleased(t, armed) })
	}
}

func unlinkOwnReleased(t *testing.T, armed bool) {
	store := &rollbackFirst{Store: memkv.New()}
	e, ctx := formatOn(t, store)
	e.SetOpenCheck(func(meta.Ino) bool { return false }) // the vfs holds nothing open
	sid, err := e.BeginSession(ctx, meta.SessionInfo{Host: "x"})
	if err != nil {
		t.Fatal(err)
	}
	ent, err := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: "own", Type: meta.TypeFile, Mode: 0o644, Open: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Truncate(ctx, ent.Ino, 4096); err != nil { // chunks to read after the record's drop
		t.Fatal(err)
	}
	if err := e.Release(ctx, ent.Ino); err != nil {
		t.Fatal(err)
	}
	if ids := openRecords(t, e, ctx, ent.Ino); len(ids) != 1 || ids[0] != sid {
		t.Fatalf("open records of inode %d after its create: %v, want session %d's", ent.Ino, ids, sid)
	}
	store.armed.Store(armed)
	rm, err := e.Unlink(ctx, meta.RootIno, "own")
	store.armed.Store(false)
	if err != nil || rm.Orphan {
		t.Fatalf("unlink: %+v %v", rm, err)
	}
	if ids := openRecords(t, e, ctx, ent.Ino); len(ids) != 0 {
		t.Errorf("open records of sessions %v for inode %d outlived the inode", ids, ent.Ino)
	}
}

// openRecords lists the sessions that record ino open.
func openRecords(t *testing.T, e *Engine, ctx context.Context, ino meta.Ino) []meta.SessionID {
	t.Helper()
	var ids []meta.SessionID
	err := e.view(ctx, func(tx *txn) error {
		var err error
		ids, err = tx.openSessions(ino)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}
