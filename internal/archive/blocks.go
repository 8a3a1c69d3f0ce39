package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"shoal/internal/data"
	"shoal/internal/meta"
	"shoal/internal/object"
	"shoal/internal/progress"
	"shoal/internal/volume"
)

// DefaultJobs is how many blocks are copied or read at a time.
const DefaultJobs = 16

// block is one block object a dump references.
type block struct {
	key  string
	size int // data length
}

// blocksOf lists the block objects of slices, by key.
func blocksOf(slices_ map[meta.SliceID]uint32, blockSize int) []block {
	ids := make([]meta.SliceID, 0, len(slices_))
	for id := range slices_ {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var out []block
	for _, id := range ids {
		size := slices_[id]
		for i := range data.BlockCount(blockSize, size) {
			n := data.BlockLen(blockSize, size, i)
			out = append(out, block{key: data.BlockKey(id, i, n), size: n})
		}
	}
	return out
}

// listBlocks lists a store's block objects: key → stored size.
func listBlocks(ctx context.Context, s object.Store) (map[string]int64, error) {
	out := map[string]int64{}
	err := object.Walk(ctx, s, data.BlockPrefix, func(page []object.Info) {
		for _, info := range page {
			out[info.Key] = info.Size
		}
	})
	if err != nil {
		return nil, fmt.Errorf("listing the blocks of %s: %w", s, err)
	}
	return out, nil
}

// missing returns the blocks present lacks, or holds in a size no
// stored form of them takes.
func missing(blocks []block, present map[string]int64, f meta.Format) []block {
	ok := volume.StoredSizeOK(f)
	var out []block
	for _, b := range blocks {
		if stored, has := present[b.key]; !has || !ok(stored, int64(b.size)) {
			out = append(out, b)
		}
	}
	return out
}

// errSrcMissing is a block to copy that its source store lacks.
var errSrcMissing = errors.New("a block to copy is missing")

// copyBlocks copies blocks raw from src to dst, jobs at a time, calls
// done (when set, from several goroutines) with each block copied and its
// stored size, and returns the bytes copied. Each block is read whole
// into memory (at most a block's stored size) and Put with its size. A
// block src lacks fails with errSrcMissing.
func copyBlocks(ctx context.Context, src, dst object.Store, blocks []block, jobs int, p *progress.Progress, done func(key string, stored int64)) (int64, error) {
	var copied int64
	var mu sync.Mutex
	err := parallel(ctx, blocks, jobs, func(ctx context.Context, b block) error {
		n, err := copyObject(ctx, src, dst, b.key, b.size)
		if err != nil {
			return err
		}
		if done != nil {
			done(b.key, n)
		}
		mu.Lock()
		copied += n
		mu.Unlock()
		p.Add(1)
		return nil
	})
	return copied, err
}

// copyBufs holds copyObject's buffers: a block read whole, grown once.
var copyBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// copyObject copies one block of n data bytes raw from src to dst.
func copyObject(ctx context.Context, src, dst object.Store, key string, n int) (int64, error) {
	rc, err := src.Get(ctx, key, 0, -1)
	if errors.Is(err, object.ErrNotExist) {
		return 0, fmt.Errorf("%w: %s is not in %s", errSrcMissing, key, src)
	}
	if err != nil {
		return 0, fmt.Errorf("reading block %s from %s: %w", key, src, err)
	}
	buf := copyBufs.Get().(*bytes.Buffer)
	defer copyBufs.Put(buf)
	buf.Reset()
	buf.Grow(n + n/256 + 4096) // room for a stored form's headers and checksums
	_, err = io.Copy(buf, rc)
	rc.Close()
	if err != nil {
		return 0, fmt.Errorf("reading block %s from %s: %w", key, src, err)
	}
	stored := int64(buf.Len())
	if err := dst.Put(ctx, key, buf, stored); err != nil {
		return 0, fmt.Errorf("writing block %s to %s: %w", key, dst, err)
	}
	return stored, nil
}

// parallel calls fn for every item, jobs at a time, and returns the first
// error (the others are cancelled).
func parallel[T any](ctx context.Context, items []T, jobs int, fn func(context.Context, T) error) error {
	if jobs <= 0 {
		jobs = DefaultJobs
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ch := make(chan T)
	var wg sync.WaitGroup
	for range min(jobs, max(len(items), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range ch {
				if err := fn(ctx, it); err != nil {
					cancel(err)
				}
			}
		}()
	}
	for _, it := range items {
		if ctx.Err() != nil {
			break
		}
		select {
		case ch <- it:
		case <-ctx.Done():
		}
	}
	close(ch)
	wg.Wait()
	return context.Cause(ctx)
}
