package gc

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"syscall"

	"shoal/internal/data"
	"shoal/internal/meta"
	"shoal/internal/object"
)

// checkMissing reports referenced slices whose blocks the listing did not
// show, after re-checking each: the block may have been deleted because
// the slice was freed after the scan, which is not damage.
func (c *collector) checkMissing(ctx context.Context) error {
	c.prog.Set("checking missing", 0, 0)
	ids := make([]meta.SliceID, 0)
	for id, r := range c.refs {
		if int(r.found) < data.BlockCount(c.o.BlockSize, r.size) {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		m, err := c.missingBlocks(ctx, id, c.refs[id])
		if err != nil {
			return err
		}
		if len(m.Keys) > 0 {
			c.rep.Missing = append(c.rep.Missing, m)
			c.rep.MissingN += len(m.Keys)
		}
		c.prog.Add(1)
	}
	return nil
}

// missingBlocks returns the blocks of slice id that are absent now, or none
// if the slice is no longer where the scan saw it.
func (c *collector) missingBlocks(ctx context.Context, id meta.SliceID, r *ref) (Missing, error) {
	m := Missing{Slice: id, Ino: r.ino, Chunk: r.chunk}
	for i := 0; i < data.BlockCount(c.o.BlockSize, r.size); i++ {
		key := data.BlockKey(id, i, data.BlockLen(c.o.BlockSize, r.size, i))
		_, err := c.store.Head(ctx, key)
		if errors.Is(err, object.ErrNotExist) {
			m.Keys = append(m.Keys, key)
		} else if err != nil && !errors.Is(err, object.ErrCorrupt) {
			// (A corrupt object through a checksum wrapper is present;
			// finding corruption is fsck's work.)
			return m, fmt.Errorf("gc: head %s: %w", key, err)
		}
	}
	if len(m.Keys) == 0 {
		return m, nil
	}
	slices, err := c.eng.ReadChunk(ctx, r.ino, r.chunk)
	if err != nil && !errors.Is(err, syscall.ENOENT) {
		return m, fmt.Errorf("gc: re-reading inode %d chunk %d: %w", r.ino, r.chunk, err)
	}
	for _, s := range slices {
		if s.ID == id {
			return m, nil
		}
	}
	return Missing{}, nil // freed meanwhile
}

// deleteLeaked confirms, then deletes, the leaked objects.
func (c *collector) deleteLeaked(ctx context.Context) error {
	if len(c.leaked) == 0 {
		return nil
	}
	if err := c.confirm(ctx); err != nil {
		return err
	}
	var after uint64
	if err := c.readCopies(ctx, &after); err != nil {
		return err
	}
	if after != c.copies {
		// A reference may have moved to an inode neither scan listed
		// (the package doc, step 5): try again next run.
		c.rep.Postponed = int64(len(c.leaked))
		c.leaked = nil
		return nil
	}
	c.prog.Set("deleting", 0, int64(len(c.leaked)))
	c.deleteAll(ctx, c.leaked, &c.rep.Deleted)
	return nil
}

// confirm scans the metadata again and spares leaked objects that are
// blocks of a slice referenced now (see the package doc, step 5).
func (c *collector) confirm(ctx context.Context) error {
	c.prog.Set("confirming", 0, 0)
	sizes := map[meta.SliceID]int64{} // -1: not referenced
	for _, info := range c.leaked {
		if b, ok := data.ParseBlockKey(info.Key); ok {
			sizes[b.ID] = -1
		}
	}
	err := c.sc.ScanSlices(ctx, func(_ meta.Ino, _ uint32, s meta.Slice) error {
		c.prog.Add(1)
		if _, ok := sizes[s.ID]; ok {
			sizes[s.ID] = int64(s.Size)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("gc: confirmation scan: %w", err)
	}
	kept := c.leaked[:0]
	for _, info := range c.leaked {
		b, _ := data.ParseBlockKey(info.Key)
		if size := sizes[b.ID]; size >= 0 && c.expected(uint32(size), b) {
			c.rep.Reprieved++
			continue
		}
		kept = append(kept, info)
	}
	c.leaked = kept
	return nil
}

// deleteAll deletes objects, Deletes at a time, counting successes in
// *count and failures in Report.Failures. It returns the failed keys.
func (c *collector) deleteAll(ctx context.Context, infos []object.Info, count *Count) map[string]bool {
	var mu sync.Mutex
	var wg sync.WaitGroup
	failed := map[string]bool{}
	sem := make(chan struct{}, c.o.Deletes)
	for _, info := range infos {
		sem <- struct{}{}
		wg.Add(1)
		go func(info object.Info) {
			defer wg.Done()
			defer func() { <-sem }()
			err := c.store.Delete(ctx, info.Key)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed[info.Key] = true
				c.rep.Failures = append(c.rep.Failures, fmt.Sprintf("delete %s: %v", info.Key, err))
				return
			}
			count.Add(info.Size)
			c.prog.Add(1)
		}(info)
	}
	wg.Wait()
	return failed
}

// deleteFreed deletes the listed objects of freed slices, then drops from
// the freed list every freed slice none of whose deletes failed.
func (c *collector) deleteFreed(ctx context.Context) error {
	c.prog.Set("deleting freed", 0, int64(len(c.freedObjs)))
	failed := c.deleteAll(ctx, c.freedObjs, &c.rep.FreedDel)
	bad := map[meta.SliceID]bool{}
	for key := range failed {
		b, _ := data.ParseBlockKey(key)
		bad[b.ID] = true
	}
	ids := make([]meta.SliceID, 0, len(c.freed))
	for id := range c.freed {
		if !bad[id] {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for len(ids) > 0 {
		n := min(forgetBatch, len(ids))
		if err := c.eng.ForgetFreed(ctx, ids[:n]); err != nil {
			return fmt.Errorf("gc: forgetting %d freed slices: %w", n, err)
		}
		c.rep.FreedGone += n
		ids = ids[n:]
	}
	return nil
}

// forgetBatch is how many slices one ForgetFreed call drops.
const forgetBatch = 256
