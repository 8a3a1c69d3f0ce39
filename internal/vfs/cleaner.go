package vfs

import (
	"context"
	"sync/atomic"
	"time"

	"shoal/internal/meta"
)

// cleaner deletes the objects of freed slices, DeleteDelay after it first
// saw them freed, then tells the engine to forget them. Several mounts
// may clean at once: deletes and ForgetFreed are idempotent.
//
// It reads a large window of the freed list each tick (cleanWindow) and
// keeps the first-seen time of every slice in it: reading only a small
// page would restart the delay for each page, and a backlog (after heavy
// overwriting) would then drain at one page per DeleteDelay.
//
// Before deleting anything it asks Config.MayDelete: a volume whose bucket
// another volume shares (a copy loaded from a dump) must not delete
// blocks the other may still reference. A held round keeps every slice
// freed, so the deletes happen once the bucket is the volume's alone.
type cleaner struct {
	fs    *FS
	first map[meta.SliceID]time.Time
	held  string // the last reason deletes were held, logged once
	// backlog is len(first) after the last tick: freed slices waiting
	// (Stats reads it from other goroutines).
	backlog atomic.Int64
	// expired is when the trash was last expired.
	expired time.Time
}

// trashEvery is how often a mount expires the trash.
const trashEvery = time.Minute

// cleanWindow is how many freed slices one tick looks at.
const cleanWindow = 100000

func newCleaner(fs *FS) *cleaner { return &cleaner{fs: fs, first: map[meta.SliceID]time.Time{}} }

func (c *cleaner) run(ctx context.Context) {
	t := time.NewTicker(c.fs.cfg.CleanInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			now := time.Now()
			c.expireTrash(ctx, now)
			if err := c.clean(ctx, now); err != nil && ctx.Err() == nil {
				c.fs.log.Warn("deleting freed data failed; will retry", "err", err)
			}
		}
	}
}

// clean deletes one batch of freed slices that are old enough.
func (c *cleaner) clean(ctx context.Context, now time.Time) error {
	freed, err := c.fs.engine.FreedSlices(ctx, cleanWindow)
	if err != nil {
		return err
	}
	seen := make(map[meta.SliceID]time.Time, len(freed))
	var ripe []meta.Slice
	for _, s := range freed {
		first, ok := c.first[s.ID]
		if !ok {
			first = now
		}
		seen[s.ID] = first
		if now.Sub(first) >= c.fs.cfg.DeleteDelay {
			ripe = append(ripe, s)
		}
	}
	c.first = seen
	defer func() { c.backlog.Store(int64(len(c.first))) }()
	if len(ripe) == 0 || !c.mayDelete(ctx) {
		return nil
	}
	var done []meta.SliceID
	for _, s := range ripe {
		if err := c.fs.data.DeleteSlice(ctx, s.ID, s.Size); err != nil {
			c.fs.log.Warn("deleting slice objects failed", "slice", s.ID, "err", err)
			continue
		}
		delete(c.first, s.ID)
		done = append(done, s.ID)
	}
	if len(done) == 0 {
		return nil
	}
	return c.fs.engine.ForgetFreed(ctx, done)
}

// mayDelete asks Config.MayDelete, logging a hold once per reason.
func (c *cleaner) mayDelete(ctx context.Context) bool {
	if c.fs.cfg.MayDelete == nil {
		return true
	}
	err := c.fs.cfg.MayDelete(ctx)
	if err == nil {
		if c.held != "" {
			c.fs.log.Info("deleting freed data again")
		}
		c.held = ""
		return true
	}
	if msg := err.Error(); msg != c.held && ctx.Err() == nil {
		c.held = msg
		c.fs.log.Warn("freed data is kept, not deleted", "reason", err)
	}
	return false
}

// expireTrash empties the expired part of the trash, once per trashEvery.
func (c *cleaner) expireTrash(ctx context.Context, now time.Time) {
	tr, ok := c.fs.engine.(meta.Trash)
	if !ok || now.Sub(c.expired) < trashEvery {
		return
	}
	c.expired = now
	n, err := tr.ExpireTrash(ctx, now)
	switch {
	case err != nil && ctx.Err() == nil:
		c.fs.log.Warn("emptying the trash failed; will retry", "err", err)
	case n > 0:
		c.fs.log.Info("emptied expired trash", "files", n)
	}
}
