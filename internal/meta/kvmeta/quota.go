package kvmeta

import (
	"context"
	"syscall"
)

// Volume quotas (Format.Capacity and Format.Inodes) are enforced by the
// operations that grow usage: a new inode, a slice commit or truncate or
// fallocate that makes a file longer, a copy_file_range that extends its
// target. Space is the file length rounded up to 4 KiB (spaceOf), so an
// extending truncate counts as space, as the length is what du and df see
// here. An operation that would pass a limit fails with ENOSPC, like a
// full disk, and changes nothing.
//
// The check runs inside the operation's transaction, after the operation
// has worked out its usage change, and only when that change grows usage
// on a volume with a limit: a volume without limits reads nothing more.
// It compares the stored counter (read in the same transaction) plus this
// client's own unflushed, flushing and in-flight usage with the limit.
// What it cannot see is the usage other clients hold in memory; to bound
// that, a client on a volume with limits flushes its delta as soon as it
// passes flushThreshold (below), in the operation that passed it, instead
// of waiting for the once-a-second flush. Hence the documented bound:
//
//	overshoot ≤ (mounts − 1) × (2 × threshold + growth of operations in flight)
//
// where one threshold is held unflushed and one may be in a flush the
// check's snapshot does not show yet. With the default 4 MiB block size a
// writer's operation in flight commits at most a few blocks, so on a small
// volume the overshoot is a few MiB per other mount (docs/admin.md).

// Early-flush thresholds: the smaller of a fixed amount and a sixteenth of
// the limit (at least one inode, 64 KiB), so a small volume gets a small
// bound.
const (
	maxSpaceThreshold = 16 << 20
	maxFilesThreshold = 64
	minSpaceThreshold = 64 << 10
)

// limits returns the volume's limits (0: none) from the cached format.
func (e *Engine) limits() (capacity, inodes uint64) {
	return e.capacity.Load(), e.inodeLimit.Load()
}

// thresholds returns the early-flush thresholds for the volume's limits.
func thresholds(capacity, inodes uint64) (space, files int64) {
	space = min(maxSpaceThreshold, max(int64(capacity/16), minSpaceThreshold))
	files = min(maxFilesThreshold, max(int64(inodes/16), 1))
	return space, files
}

// checkVolume refuses with ENOSPC an operation that would take the
// volume past a limit. On success the growth is held in flight (so other
// operations of this client count it) until release.
func (e *Engine) checkVolume(t *txn) error {
	growSpace, growFiles := t.space > 0, t.files > 0
	if !growSpace && !growFiles {
		return nil
	}
	capacity, inodes := e.limits()
	growSpace = growSpace && capacity > 0
	growFiles = growFiles && inodes > 0
	if !growSpace && !growFiles {
		return nil
	}
	localSpace, localFiles := e.usage.local()
	if growSpace {
		stored, err := t.tx.Get(counterKey(counterUsedSpace))
		if err != nil {
			return err
		}
		if decodeInt(stored)+localSpace+t.space > int64(capacity) {
			return syscall.ENOSPC
		}
	}
	if growFiles {
		stored, err := t.tx.Get(counterKey(counterUsedInodes))
		if err != nil {
			return err
		}
		if decodeInt(stored)+localFiles+t.files > int64(inodes) {
			return syscall.ENOSPC
		}
	}
	t.held = true
	e.usage.hold(t.space, t.files)
	return nil
}

// release ends an attempt's hold on in-flight usage.
func (e *Engine) release(t *txn) {
	if t.held {
		e.usage.hold(-t.space, -t.files)
		t.held = false
	}
}

// flushEarly flushes this client's usage delta once it passes the
// thresholds, on a volume with limits, so other clients' checks see it.
func (e *Engine) flushEarly(ctx context.Context) {
	capacity, inodes := e.limits()
	if capacity == 0 && inodes == 0 {
		return
	}
	space, files := thresholds(capacity, inodes)
	if e.usage.space.Load() < space && e.usage.files.Load() < files {
		return
	}
	// A failed flush keeps its deltas for the next attempt.
	_ = e.flushUsage(ctx)
}
