package object

import (
	"context"
	"errors"
	"sync"
)

// A SyncBatch makes many Puts durable together instead of each on its
// own: a Put whose context carries the batch (WithSyncBatch) may return
// once the object is in place, atomically for readers (they see all of
// it or nothing), but before it is durable, leaving the rest (fsyncs) to
// the batch; Sync then makes every such Put durable. A backup copying
// many blocks does that: it needs them durable only before its manifest,
// and writing them through the page cache and syncing them together
// costs less than an fsync of each file and directory as it is written.
// Until Sync returns nil, a crash may lose any of the batch's objects or
// leave one incomplete (shorter than it was put), so whoever trusts an
// object after a crash must check it (block keys carry their length).
// It is a hint, as WithReadSoon is: stores whose Puts are durable anyway
// (S3, memory) ignore it. With WithFreshKey too, a file store may write
// the object in place (a key whose name it made durable ahead), so that
// until Sync a reader of the key could see it incomplete: fresh keys are
// read by nobody before their Put's caller names them (data/gated.go).
type SyncBatch struct {
	mu    sync.Mutex
	ids   map[any]bool
	syncs []func() error
}

// syncBatchKey marks a Put context with WithSyncBatch.
type syncBatchKey struct{}

// WithSyncBatch returns a context for Puts whose durability b takes.
func WithSyncBatch(ctx context.Context, b *SyncBatch) context.Context {
	return context.WithValue(ctx, syncBatchKey{}, b)
}

// SyncBatchOf returns the batch ctx carries, or nil.
func SyncBatchOf(ctx context.Context) *SyncBatch {
	b, _ := ctx.Value(syncBatchKey{}).(*SyncBatch)
	return b
}

// Later is for stores: it leaves fn, what makes a Put durable (an
// fsync), to Sync, once per id (later calls with the same id add
// nothing).
func (b *SyncBatch) Later(id any, fn func() error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ids == nil {
		b.ids = map[any]bool{}
	}
	if !b.ids[id] {
		b.ids[id] = true
		b.syncs = append(b.syncs, fn)
	}
}

// Pending returns how many syncs the batch holds.
func (b *SyncBatch) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.syncs)
}

// syncJobs is how many of a batch's syncs run at a time.
const syncJobs = 16

// Sync runs what the batch's Puts left to it, several at a time, and
// returns their errors. Once it returns nil, every Put made with the
// batch before the call is durable. The batch can be used again.
func (b *SyncBatch) Sync() error {
	b.mu.Lock()
	syncs := b.syncs
	b.syncs, b.ids = nil, nil
	b.mu.Unlock()
	errs := make([]error, len(syncs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, syncJobs)
	for i, fn := range syncs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = fn()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
