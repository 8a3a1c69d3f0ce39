package vfs

import (
	"cmp"
	"context"
	"slices"
	"sync/atomic"
	"time"

	"shoal/internal/meta"
)

// cleaner deletes the objects of freed slices, DeleteDelay after it first
// saw them freed, then tells the engine to forget them. Several mounts
// may clean at once: deletes and ForgetFreed are idempotent.
//
// It keeps the first-seen time of up to cleanWindow freed slices, in
// memory: reading only a small window each tick and forgetting the rest
// would restart the delay for each window, and a backlog (after heavy
// overwriting) would then drain at one window per DeleteDelay. But it
// reads the freed list in pages of cleanPage slices, each its own
// engine call (FreedSlices after the last ID of the previous page),
// cleanPages of them a tick and more while the pages come full and the
// tick has read for less than cleanBudget, going on from where the last
// tick stopped and starting over at the end: one engine request is one
// transaction, and on Redis a listing is one script, which holds the
// whole server (a window of 1,766 slices held Redis 24-39 ms, 100,000
// held it 0.6-3.4 s on the loaded test machine, every two seconds). The
// budget lets a backlog drain at several thousand slices a second while
// no engine call is long. A freed slice stays freed until it
// is forgotten, so a slice seen once need not be read again: it is
// deleted when ripe. One that another mount deleted and forgot first is
// dropped at the end of a pass over the list that did not see it (or
// deleted again: harmless). ForgetFreed goes in batches of cleanPage too.
//
// Before deleting anything it asks Config.MayDelete: a volume whose bucket
// another volume shares (a copy loaded from a dump) must not delete
// blocks the other may still reference. A held round keeps every slice
// freed, so the deletes happen once the bucket is the volume's alone.
type cleaner struct {
	fs    *FS
	first map[meta.SliceID]freedSlice
	// after is the last slice ID the current pass read (0: a pass starts
	// at the next tick); pass is the slices of first this pass saw.
	after meta.SliceID
	pass  map[meta.SliceID]bool
	held  string // the last reason deletes were held, logged once
	// backlog is len(first) after the last tick: freed slices waiting
	// (Stats reads it from other goroutines).
	backlog atomic.Int64
	// expired is when the trash was last expired.
	expired time.Time
}

// freedSlice is a freed slice the cleaner knows, and when it first saw it.
type freedSlice struct {
	size  uint32
	first time.Time
}

// trashEvery is how often a mount expires the trash.
const trashEvery = time.Minute

// cleanWindow is how many freed slices the cleaner keeps first-seen times
// of; cleanPage how many one engine call reads or forgets (measured on a
// loaded Redis: 6-15 µs a slice, so about 0.5-1 ms a page); cleanPages
// how many pages one tick reads at least, and cleanBudget how long it
// goes on reading full pages (a tenth of the default tick).
const (
	cleanWindow = 100000
	cleanPage   = 64
	cleanPages  = 32
)

var cleanBudget = 200 * time.Millisecond // a variable for tests

func newCleaner(fs *FS) *cleaner {
	return &cleaner{fs: fs, first: map[meta.SliceID]freedSlice{}, pass: map[meta.SliceID]bool{}}
}

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

// clean reads the next pages of the freed list and deletes the freed
// slices that are old enough.
func (c *cleaner) clean(ctx context.Context, now time.Time) error {
	defer func() { c.backlog.Store(int64(len(c.first))) }()
	if err := c.read(ctx, now); err != nil {
		return err
	}
	var ripe []meta.Slice
	for id, f := range c.first {
		if now.Sub(f.first) >= c.fs.cfg.DeleteDelay {
			ripe = append(ripe, meta.Slice{ID: id, Size: f.size})
		}
	}
	if len(ripe) == 0 || !c.mayDelete(ctx) {
		return nil
	}
	slices.SortFunc(ripe, func(a, b meta.Slice) int { return cmp.Compare(a.ID, b.ID) })
	var done []meta.SliceID
	for _, s := range ripe {
		if err := c.fs.data.DeleteSlice(ctx, s.ID, s.Size); err != nil {
			c.fs.log.Warn("deleting slice objects failed", "slice", s.ID, "err", err)
			continue
		}
		done = append(done, s.ID)
	}
	for len(done) > 0 {
		n := min(len(done), cleanPage)
		if err := c.fs.engine.ForgetFreed(ctx, done[:n]); err != nil {
			return err // the rest stay known, and are deleted again later
		}
		for _, id := range done[:n] {
			delete(c.first, id)
			delete(c.pass, id)
		}
		done = done[n:]
	}
	return nil
}

// read reads cleanPages pages of the freed list, and more within
// cleanBudget, from where the last tick stopped, noting when it first saw
// each slice.
func (c *cleaner) read(ctx context.Context, now time.Time) error {
	start := time.Now()
	for i := 0; i < cleanPages || time.Since(start) < cleanBudget; i++ {
		freed, err := c.fs.engine.FreedSlices(ctx, c.after, cleanPage)
		if err != nil {
			return err
		}
		for _, s := range freed {
			if _, ok := c.first[s.ID]; !ok {
				if len(c.first) >= cleanWindow {
					continue // seen in a later pass, once some are deleted
				}
				c.first[s.ID] = freedSlice{size: s.Size, first: now}
			}
			c.pass[s.ID] = true
		}
		if len(freed) < cleanPage {
			// The end of a pass: what it did not see was forgotten
			// (by another mount).
			for id := range c.first {
				if !c.pass[id] {
					delete(c.first, id)
				}
			}
			clear(c.pass)
			c.after = 0
			return nil
		}
		c.after = freed[len(freed)-1].ID
	}
	return nil
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
