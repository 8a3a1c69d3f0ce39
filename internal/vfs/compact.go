package vfs

import (
	"context"
	"errors"
	"sync"

	"shoal/internal/meta"
)

// compactor rewrites fragmented chunks in the background. A chunk with
// many slices reads slowly (many objects per read) and keeps shadowed
// data alive; compaction reads its visible data, stores it as new slices
// and swaps the lists in one engine transaction (CompactChunk). If a write
// raced in, the engine keeps it after the replacement; if the list changed
// otherwise (truncate), the engine refuses and the new objects are deleted.
type compactor struct {
	fs      *FS
	mu      sync.Mutex
	pending map[chunkID]bool
	queue   chan chunkID
}

type chunkID struct {
	ino   meta.Ino
	index uint32
}

func newCompactor(fs *FS) *compactor {
	return &compactor{fs: fs, pending: map[chunkID]bool{}, queue: make(chan chunkID, 1024)}
}

// schedule queues a chunk for compaction unless it is queued already or
// the queue is full (it will be scheduled again by a later write).
func (c *compactor) schedule(ino meta.Ino, index uint32) {
	id := chunkID{ino, index}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[id] {
		return
	}
	select {
	case c.queue <- id:
		c.pending[id] = true
	default:
	}
}

func (c *compactor) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-c.queue:
			if err := c.compact(ctx, id); err != nil && ctx.Err() == nil {
				c.fs.log.Warn("compaction failed", "ino", id.ino, "chunk", id.index, "err", err)
			}
			c.mu.Lock()
			delete(c.pending, id)
			c.mu.Unlock()
		}
	}
}

func (c *compactor) compact(ctx context.Context, id chunkID) error {
	fs := c.fs
	slices, err := fs.engine.ReadChunk(ctx, id.ino, id.index)
	if err != nil || !worthCompacting(slices, fs.cfg.CompactThreshold) {
		return err
	}
	repl, err := fs.data.Compact(ctx, id.ino, id.index, slices, fs.engine.NewSliceID)
	if err != nil {
		return err
	}
	err = fs.engine.CompactChunk(ctx, id.ino, id.index, slices, repl)
	if err != nil {
		for _, s := range repl {
			if s.ID != 0 {
				_ = fs.data.DeleteSlice(ctx, s.ID, s.Size)
			}
		}
		if errors.Is(err, meta.ErrConflict) {
			return nil
		}
		return err
	}
	if f := fs.openFile(id.ino); f != nil {
		f.forgetChunks(id.index)
	}
	return nil
}

// maxSlices is the slice count at which a chunk is compacted whatever the
// rewrite costs. Random reads do not rescan a long list (the data layer
// keeps the resolved form of a list that keeps being read: shared_paint.go)
// and commits append to it, so the count bounds the list's size in the
// engine (about 100 KiB at 4,096 records) and the objects a sequential read
// crosses. At 1,024, random 4 KiB writes to a VM image rewrote their 64 MiB
// chunk after every 4 MiB written (16x write amplification, and background
// work competing with the guest for the cores); at 4,096 the quarter-extent
// rule below comes first for them (4x).
const maxSlices = 4096

// worthCompacting bounds write amplification. Compaction rewrites the
// chunk's whole extent, so many small random writes over a large chunk
// would rewrite it again and again (64 MiB per few KiB written). A chunk
// is compacted once it has threshold slices and the bytes written after
// its first slice reach a quarter of its extent (so at most about 4x
// amplification), or when it reaches maxSlices regardless.
func worthCompacting(slices []meta.Slice, threshold int) bool {
	if len(slices) < max(threshold, 2) {
		return false
	}
	if len(slices) >= maxSlices {
		return true
	}
	var written uint64
	for _, s := range slices[1:] {
		written += uint64(s.Len)
	}
	return written*4 >= uint64(meta.Extent(slices))
}
