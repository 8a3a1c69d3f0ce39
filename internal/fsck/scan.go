package fsck

import (
	"context"
	"fmt"

	"shoal/internal/data"
	"shoal/internal/meta"
	"shoal/internal/object"
)

// chunkPrefix is where block objects live (data.BlockKey).
const chunkPrefix = "chunks/"

// holder is one chunk that refers to a slice.
type holder struct {
	ino   meta.Ino
	chunk uint32
}

// sliceRef is a referenced slice: its size and every chunk holding it.
type sliceRef struct {
	size    uint32
	holders []holder
}

// readFreed loads the freed list.
func (c *checker) readFreed(ctx context.Context) error {
	c.prog.Set("freed list", 0, 0)
	freed, err := c.eng.FreedSlices(ctx, 0, 0)
	if err != nil {
		return fmt.Errorf("fsck: reading freed slices: %w", err)
	}
	c.freed = make(map[meta.SliceID]bool, len(freed))
	for _, s := range freed {
		c.freed[s.ID] = true
	}
	return nil
}

// scan records every referenced slice and its holders.
func (c *checker) scan(ctx context.Context) error {
	c.prog.Set("scanning slices", 0, 0)
	c.refs = map[meta.SliceID]*sliceRef{}
	err := c.sc.ScanSlices(ctx, func(ino meta.Ino, index uint32, s meta.Slice) error {
		c.rep.SliceRefs++
		c.prog.Add(1)
		r, ok := c.refs[s.ID]
		if !ok {
			r = &sliceRef{size: s.Size}
			c.refs[s.ID] = r
		}
		h := holder{ino, index}
		if n := len(r.holders); n == 0 || r.holders[n-1] != h {
			r.holders = append(r.holders, h)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("fsck: scanning slices: %w", err)
	}
	c.rep.Slices = len(c.refs)
	for _, r := range c.refs {
		c.rep.Blocks += int64(data.BlockCount(c.o.BlockSize, r.size))
	}
	return nil
}

// list pages through the block objects and classifies each.
func (c *checker) list(ctx context.Context) error {
	c.prog.Set("listing objects", 0, 0)
	c.present = map[string]int64{}
	err := object.Walk(ctx, c.raw, chunkPrefix, func(page []object.Info) {
		for _, info := range page {
			c.classify(info)
		}
		c.prog.Add(int64(len(page)))
	})
	if err != nil {
		return fmt.Errorf("fsck: %w", err)
	}
	return nil
}

// classify files one listed object (stored size) under live, odd, freed,
// leaked, prepared or foreign.
func (c *checker) classify(info object.Info) {
	c.rep.Objects.Add(info.Size)
	b, ok := data.ParseBlockKey(info.Key)
	if !ok {
		c.rep.Foreign.Add(info.Size)
		return
	}
	if r, ok := c.refs[b.ID]; ok {
		if b.Index < data.BlockCount(c.o.BlockSize, r.size) && b.Size == data.BlockLen(c.o.BlockSize, r.size, b.Index) {
			c.present[info.Key] = info.Size
			c.rep.Live.Add(info.Size)
			return
		}
		c.rep.Odd.Add(info.Size)
		c.sample(&c.rep.OddSample, info.Key)
		return
	}
	if c.freed[b.ID] {
		c.rep.Freed.Add(info.Size)
		return
	}
	if info.Size == 0 { // a block is never empty: a name made ahead
		c.rep.Prepared.Add(0)
		return
	}
	c.rep.Leaked.Add(info.Size)
	c.sample(&c.rep.LeakedSample, info.Key)
}
