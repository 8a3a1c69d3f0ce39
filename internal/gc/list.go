package gc

import (
	"context"
	"fmt"

	"shoal/internal/data"
	"shoal/internal/object"
)

// chunkPrefix is where block objects live (data.BlockKey).
const chunkPrefix = data.BlockPrefix

// list pages through the block objects and classifies each.
func (c *collector) list(ctx context.Context) error {
	c.prog.Set("listing objects", 0, 0)
	err := object.Walk(ctx, c.store, chunkPrefix, func(page []object.Info) {
		for _, info := range page {
			c.classify(info)
		}
		c.prog.Add(int64(len(page)))
	})
	if err != nil {
		return fmt.Errorf("gc: %w", err)
	}
	return nil
}

// classify files one listed object under live, mismatched, freed, leaked,
// young or foreign.
func (c *collector) classify(info object.Info) {
	c.rep.Objects.Add(info.Size)
	b, ok := data.ParseBlockKey(info.Key)
	if !ok {
		c.rep.Foreign.Add(info.Size)
		c.sample(&c.rep.Foreigners, info.Key)
		return
	}
	if r, ok := c.refs[b.ID]; ok {
		if c.expected(r.size, b) {
			r.found++
			c.rep.Live.Add(info.Size)
			return
		}
		// A live slice never has other blocks (its keys are final once
		// stored): this is a wrong block size or a bug, not a crash leak.
		c.rep.Mismatched.Add(info.Size)
		c.sample(&c.rep.MismatchedKeys, info.Key)
		return
	}
	if _, ok := c.freed[b.ID]; ok {
		c.rep.FreedObjs.Add(info.Size)
		c.freedObjs = append(c.freedObjs, info)
		return
	}
	cutoff := c.rep.Cutoff
	if info.Size == 0 {
		cutoff = c.rep.Start.Add(-c.o.atLeast(PreparedGrace)) // a block name made ahead
	}
	if !info.ModTime.Before(cutoff) {
		c.rep.Young.Add(info.Size)
		c.sample(&c.rep.YoungKeys, info.Key)
		return
	}
	c.rep.Leaked.Add(info.Size)
	c.sample(&c.rep.LeakedKeys, info.Key)
	c.leaked = append(c.leaked, info)
}

// expected reports whether b is one of the blocks of a slice of size bytes.
func (c *collector) expected(size uint32, b data.BlockRef) bool {
	return b.Index < data.BlockCount(c.o.BlockSize, size) && b.Size == data.BlockLen(c.o.BlockSize, size, b.Index)
}
