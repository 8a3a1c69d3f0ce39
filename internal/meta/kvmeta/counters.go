package kvmeta

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

// Counters are the only keys every client would otherwise write on every
// create, so none is written per operation:
//   - inode and slice ids are reserved in batches, each batch in its own
//     short transaction (run before, never inside, an operation's
//     transaction: backends need not support nesting);
//   - used space and inode counts are kept as in-memory deltas and added to
//     their counters about once a second and on Close. A crash loses at most
//     that second of accounting; fsck can recount.
const (
	inodeBatch = 64
	sliceBatch = 256
)

// Default totals Statfs reports for a volume formatted without limits.
const (
	defaultCapacity = 1 << 50 // 1 PiB
	defaultInodes   = 1 << 40
)

// idPool hands out ids from a reserved range [next, end).
type idPool struct {
	key   string // counter holding the next unreserved id
	batch uint64
	first uint64 // the first id ever handed out

	mu        sync.Mutex
	next, end uint64
}

// alloc returns a fresh id, reserving a new batch when needed.
func (p *idPool) alloc(ctx context.Context, store kv.Store) (uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next == p.end {
		if err := p.reserve(ctx, store); err != nil {
			return 0, err
		}
	}
	id := p.next
	p.next++
	return id, nil
}

// reserve moves the counter one batch ahead in its own transaction.
func (p *idPool) reserve(ctx context.Context, store kv.Store) error {
	var start uint64
	err := store.Txn(ctx, func(tx kv.Tx) error {
		raw, err := tx.Get(counterKey(p.key))
		if err != nil {
			return err
		}
		start = max(uint64(decodeInt(raw)), p.first)
		tx.Set(counterKey(p.key), encodeInt(int64(start+p.batch)))
		return nil
	})
	if err != nil {
		return err
	}
	p.next, p.end = start, start+p.batch
	return nil
}

// giveBack returns an id that was allocated but not used, if no later id was
// handed out since, so a failed create (EEXIST) wastes nothing.
func (p *idPool) giveBack(id uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id+1 == p.next {
		p.next = id
	}
}

// forget drops the reserved range (after a restore replaced the counters).
func (p *idPool) forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next, p.end = 0, 0
}

// usage holds the used space and inode deltas not yet in the store, and
// (for quota checks, quota.go) the deltas being flushed and those of
// operations in flight that passed a check but are not committed yet.
type usage struct {
	space atomic.Int64
	files atomic.Int64

	pendingSpace atomic.Int64 // flushing or in flight
	pendingFiles atomic.Int64
}

// local returns the usage this client has that the store may not show.
func (u *usage) local() (space, files int64) {
	return u.space.Load() + u.pendingSpace.Load(), u.files.Load() + u.pendingFiles.Load()
}

// hold adds to (or, negative, removes from) the pending usage.
func (u *usage) hold(space, files int64) {
	u.pendingSpace.Add(space)
	u.pendingFiles.Add(files)
}

func (u *usage) add(space, files int64) {
	if space != 0 {
		u.space.Add(space)
	}
	if files != 0 {
		u.files.Add(files)
	}
}

func (e *Engine) flushLoop(every time.Duration) {
	defer close(e.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for ticks := 1; ; ticks++ {
		select {
		case <-e.stop:
			return
		case <-tick.C:
			// A failed flush keeps its deltas (and drops) for the next tick,
			// and a failed refresh keeps the quota list it had.
			_ = e.flushLingering(context.Background())
			_ = e.flushUsage(context.Background())
			if ticks%quotaRefresh == 0 && e.cachedFormat() != nil {
				_ = e.refreshQuotas(context.Background())
				_ = e.refreshTrashDays(context.Background())
			}
		}
	}
}

// flushUsage adds the pending deltas to the stored counters. While the
// flush runs, the amount counts as pending (counted twice for an instant,
// never zero times), so this client's quota checks always see it.
func (e *Engine) flushUsage(ctx context.Context) error {
	space, files := e.usage.space.Load(), e.usage.files.Load()
	if space == 0 && files == 0 {
		return nil
	}
	e.usage.hold(space, files)
	e.usage.add(-space, -files)
	defer e.usage.hold(-space, -files)
	err := e.store.Txn(ctx, func(tx kv.Tx) error {
		if err := addCounter(tx, counterUsedSpace, space); err != nil {
			return err
		}
		return addCounter(tx, counterUsedInodes, files)
	})
	if err != nil {
		e.usage.add(space, files)
		return wrap(err, "flush usage")
	}
	return nil
}

func addCounter(tx kv.Tx, name string, delta int64) error {
	if delta == 0 {
		return nil
	}
	raw, err := tx.Get(counterKey(name))
	if err != nil {
		return err
	}
	tx.Set(counterKey(name), encodeInt(decodeInt(raw)+delta))
	return nil
}

// NewSliceID returns a slice id from the client's reserved batch.
func (e *Engine) NewSliceID(ctx context.Context) (meta.SliceID, error) {
	id, err := e.slices.alloc(ctx, e.store)
	return meta.SliceID(id), wrap(err, "new slice id")
}

// newInode returns a fresh inode number.
func (e *Engine) newInode(ctx context.Context) (meta.Ino, error) {
	id, err := e.inodes.alloc(ctx, e.store)
	return meta.Ino(id), err
}

// Statfs returns the stored usage plus this client's pending deltas.
// Other clients' last second of changes may be missing.
func (e *Engine) Statfs(ctx context.Context) (meta.Statfs, error) {
	var st meta.Statfs
	f := e.cachedFormat()
	err := e.view(ctx, func(t *txn) error {
		if f == nil {
			loaded, err := t.format()
			if err != nil {
				return err
			}
			f = &loaded
		}
		space, err := t.tx.Get(counterKey(counterUsedSpace))
		if err != nil {
			return err
		}
		files, err := t.tx.Get(counterKey(counterUsedInodes))
		st.UsedSpace = uint64(max(0, decodeInt(space)+e.usage.space.Load()))
		st.UsedInodes = uint64(max(0, decodeInt(files)+e.usage.files.Load()))
		return err
	})
	if err != nil {
		return meta.Statfs{}, wrap(err, "statfs")
	}
	st.TotalSpace, st.TotalInodes = f.Capacity, f.Inodes
	if st.TotalSpace == 0 {
		st.TotalSpace = defaultCapacity
	}
	if st.TotalInodes == 0 {
		st.TotalInodes = defaultInodes
	}
	return st, nil
}
