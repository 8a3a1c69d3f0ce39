package kvmeta

import (
	"context"
	"syscall"
	"time"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

var _ meta.LiveTreeDumper = (*Engine)(nil)

// DumpLive dumps a tree that mounts are changing, as it is at one
// instant, without a snapshot: the whole tree dump (dumptree.go) runs in
// one consistent read of the volume (kv.ConsistentRead): a View where the
// store's Views are MVCC snapshots (SQLite, PostgreSQL), so writers go
// on; an Exclusive on Redis, whose Views would conflict under writers, so
// writers wait while the tree is read. The dump is written as it is read,
// inside that read; an attempt that runs again starts a new output.
//
// What a snapshot's copy costs (a record per inode written, a reference
// per slice taken, then all of it deleted again) is saved, and so is what
// it gives: nothing holds the slices the dump names once the read ends.
// The caller (a backup) must copy their blocks knowing they may be freed
// and deleted meanwhile (meta.LiveTreeDumper).

// DumpLive implements meta.LiveTreeDumper.
func (e *Engine) DumpLive(ctx context.Context, req meta.LiveDump) (meta.TreeDump, error) {
	var out meta.TreeDump
	err := e.consistentRead(ctx, func(t *txn) error {
		top, err := t.resolvePath(req.Path)
		if err != nil {
			return err
		}
		if inside, err := t.inSnapshots(top); err != nil || inside {
			return firstErr(err, syscall.EINVAL)
		}
		w, err := req.Begin()
		if err != nil {
			return err
		}
		d := newTreeDumper(e, top, w)
		d.read = func(_ context.Context, fn func(t *txn) error) error { return fn(t) }
		d.skipRoot, d.direct = top == meta.RootIno, true
		d.slice = req.Slice
		if err := d.run(ctx); err != nil {
			return err
		}
		out = d.out
		return nil
	})
	return out, wrap(err, "dump %q", req.Path)
}

// consistentRead runs fn, which only reads, in one consistent state of
// the volume (kv.ConsistentRead).
func (e *Engine) consistentRead(ctx context.Context, fn func(t *txn) error) error {
	started := time.Now()
	err := kv.ConsistentRead(ctx, e.store, func(tx kv.Tx) error {
		return fn(newTxn(ctx, tx))
	})
	e.txns.view(time.Since(started))
	return err
}
