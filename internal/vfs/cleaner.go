package vfs

import (
	"context"
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
type cleaner struct {
	fs    *FS
	first map[meta.SliceID]time.Time
}

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
			if err := c.clean(ctx, time.Now()); err != nil && ctx.Err() == nil {
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
	var done []meta.SliceID
	for _, s := range freed {
		first, ok := c.first[s.ID]
		if !ok {
			first = now
		}
		if now.Sub(first) < c.fs.cfg.DeleteDelay {
			seen[s.ID] = first
			continue
		}
		if err := c.fs.data.DeleteSlice(ctx, s.ID, s.Size); err != nil {
			seen[s.ID] = first
			c.fs.log.Warn("deleting slice objects failed", "slice", s.ID, "err", err)
			continue
		}
		done = append(done, s.ID)
	}
	c.first = seen
	if len(done) == 0 {
		return nil
	}
	return c.fs.engine.ForgetFreed(ctx, done)
}
