package fsck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"shoal/internal/data"
	"shoal/internal/meta"
	"shoal/internal/object"
)

// blockJob is one expected block to check.
type blockJob struct {
	key   string
	slice meta.SliceID
	index int
	size  int // data length
}

// checkBlocks checks every block of every referenced slice: present, of
// the right stored size, and (VerifyData) readable with good checksums.
func (c *checker) checkBlocks(ctx context.Context) error {
	jobs := c.expectedBlocks()
	total := int64(len(jobs))
	if c.o.VerifyData {
		total = 0
		for _, j := range jobs {
			total += int64(j.size)
		}
	}
	c.prog.Set("checking blocks", 0, total)
	var toRead []blockJob
	for _, j := range jobs {
		stored, ok := c.present[j.key]
		switch {
		case !ok:
			if err := c.recheckMissing(ctx, j, "not in the store's listing"); err != nil {
				return err
			}
		case !c.o.SizeOK(stored, int64(j.size)):
			c.damage(j, WrongSize, fmt.Sprintf("stored %d bytes, which no stored form of a %d-byte block takes", stored, j.size))
		case c.o.VerifyData:
			toRead = append(toRead, j)
			continue
		}
		if c.o.VerifyData {
			c.prog.Add(int64(j.size))
		} else {
			c.prog.Add(1)
		}
	}
	return c.readAll(ctx, toRead)
}

// expectedBlocks lists the blocks of the referenced slices, by slice id.
func (c *checker) expectedBlocks() []blockJob {
	ids := make([]meta.SliceID, 0, len(c.refs))
	for id := range c.refs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var jobs []blockJob
	for _, id := range ids {
		size := c.refs[id].size
		for i := range data.BlockCount(c.o.BlockSize, size) {
			n := data.BlockLen(c.o.BlockSize, size, i)
			jobs = append(jobs, blockJob{key: data.BlockKey(id, i, n), slice: id, index: i, size: n})
		}
	}
	return jobs
}

// readAll reads the blocks in full through the checksum wrapper, Readers
// at a time.
func (c *checker) readAll(ctx context.Context, jobs []blockJob) error {
	ch := make(chan blockJob)
	var mu sync.Mutex // guards c.rep and recheck calls from the readers
	var wg sync.WaitGroup
	var firstErr error
	for range c.o.Readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				n, err := c.readBlock(ctx, j.key)
				mu.Lock()
				if rerr := c.readResult(ctx, j, n, err); rerr != nil && firstErr == nil {
					firstErr = rerr
				}
				mu.Unlock()
				c.prog.Add(int64(j.size))
			}
		}()
	}
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		ch <- j
	}
	close(ch)
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return firstErr
}

// readBlock reads one block in full and returns its data length.
func (c *checker) readBlock(ctx context.Context, key string) (int64, error) {
	rc, err := c.sums.Get(ctx, key, 0, -1)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(io.Discard, rc)
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// readResult files the outcome of reading block j.
func (c *checker) readResult(ctx context.Context, j blockJob, n int64, err error) error {
	switch {
	case err == nil && n == int64(j.size):
		c.rep.Read.Add(n)
	case err == nil:
		c.damage(j, WrongSize, fmt.Sprintf("read %d bytes, want %d", n, j.size))
	case errors.Is(err, object.ErrCorrupt):
		c.damage(j, Corrupt, err.Error())
	case errors.Is(err, object.ErrNotExist):
		return c.recheckMissing(ctx, j, "deleted while fsck ran")
	case ctx.Err() != nil:
		return ctx.Err()
	default:
		c.rep.Failures = append(c.rep.Failures, fmt.Sprintf("%s: %v", j.key, err))
	}
	return nil
}

// recheckMissing reports block j missing unless its object has appeared
// or its slice is no longer referenced by any of its holders (freed and
// deleted while fsck ran, on a mounted volume).
func (c *checker) recheckMissing(ctx context.Context, j blockJob, why string) error {
	if _, err := c.raw.Head(ctx, j.key); err == nil {
		return nil
	} else if !errors.Is(err, object.ErrNotExist) {
		c.rep.Failures = append(c.rep.Failures, fmt.Sprintf("%s: %v", j.key, err))
		return nil
	}
	for _, h := range c.refs[j.slice].holders {
		ss, err := c.eng.ReadChunk(ctx, h.ino, h.chunk)
		if err != nil && !isNotFound(err) {
			return fmt.Errorf("fsck: re-reading inode %d chunk %d: %w", h.ino, h.chunk, err)
		}
		for _, s := range ss {
			if s.ID == j.slice {
				c.damage(j, Missing, why)
				return nil
			}
		}
	}
	return nil
}

// damage records a damaged block.
func (c *checker) damage(j blockJob, kind, detail string) {
	c.rep.Damaged = append(c.rep.Damaged, Block{Key: j.key, Slice: j.slice, Index: j.index, Kind: kind, Detail: detail})
}
