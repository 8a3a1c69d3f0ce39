package kvmeta

import (
	"context"
	"syscall"

	"shoal/internal/meta"
)

// Snapshots are read-only: every inode of one carries flagFrozen, and an
// operation that would change a frozen inode — its attributes, its data,
// its xattrs, its entries, or delete it — fails with EROFS, as on a
// read-only mount. The rule is checked in one place, Engine.update, over
// what the operation touched (touch, touchDir, drop note frozen inodes
// here), so no operation can forget it. Only the snapshot commands write
// frozen inodes, with a context from thawed.
//
// Rejected: a check in each operation (a dozen places to keep in step,
// and a new operation would be writable by default); a read-only flag in
// the vfs only (admin tools and future gateways would bypass it).

type thawKey struct{}

// thawed returns ctx with frozen inodes writable: for creating, deleting
// and restoring snapshots only.
func thawed(ctx context.Context) context.Context {
	return context.WithValue(ctx, thawKey{}, true)
}

func isThawed(ctx context.Context) bool {
	v, _ := ctx.Value(thawKey{}).(bool)
	return v
}

// noteFrozen records that the operation changes ino, if ino is frozen.
func (t *txn) noteFrozen(ino meta.Ino) {
	if t.flags[ino]&flagFrozen != 0 {
		t.frozenHit = true
	}
}

// checkFrozen refuses an operation that changed a frozen inode.
func (t *txn) checkFrozen(ctx context.Context) error {
	if t.frozenHit && !isThawed(ctx) {
		return syscall.EROFS
	}
	return nil
}

// frozen reports whether ino (whose attributes t has read) is frozen.
func (t *txn) frozen(ino meta.Ino) bool { return t.flags[ino]&flagFrozen != 0 }
