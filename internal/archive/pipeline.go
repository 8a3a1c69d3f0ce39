package archive

import (
	"context"
	"sync"

	"shoal/internal/data"
	"shoal/internal/meta"
	"shoal/internal/object"
)

// A copyJob copies blocks to the destination as a tree dump names them,
// while the tree is still being read: a live dump (meta.LiveDump.Slice)
// reports each slice as it reads its chunk records, and the job's
// workers copy the blocks of those the destination lacks once the
// destination's contents are known (present.prepare, run beside the
// dump). The job ends with the dump: then every block of the dump is
// either copied or present (finishBlocks checks). A block the volume
// lacks fails the job with errSrcMissing, which also stops the dump
// (the job's context).
type copyJob struct {
	c      *creation
	ctx    context.Context
	cancel context.CancelCauseFunc
	ready  chan struct{} // closed when present is prepared
	wg     sync.WaitGroup

	mu      sync.Mutex
	cond    *sync.Cond
	queue   []block
	closed  bool
	seen    map[meta.SliceID]bool
	copied  int64 // blocks copied
	bytes   int64 // and their stored bytes
	started bool  // prepare and the workers are running
}

// startCopy starts a copy job: what the destination holds is learned
// (once per Create) beside whatever fills the job.
func (c *creation) startCopy(ctx context.Context) *copyJob {
	j := &copyJob{c: c, ready: make(chan struct{}), seen: map[meta.SliceID]bool{}}
	j.cond = sync.NewCond(&j.mu)
	j.ctx, j.cancel = context.WithCancelCause(ctx)
	go func() {
		defer close(j.ready)
		if err := c.prepareOnce(j.ctx); err != nil {
			j.cancel(err)
		}
	}()
	jobs := c.o.Jobs
	if jobs <= 0 {
		jobs = DefaultJobs
	}
	for range jobs {
		j.wg.Add(1)
		go j.work()
	}
	return j
}

// prepareOnce prepares c.present the first time it is called.
func (c *creation) prepareOnce(ctx context.Context) error {
	c.prepared.Do(func() { c.prepareErr = c.present.prepare(ctx) })
	return c.prepareErr
}

// slice queues the blocks of slice id (a meta.LiveDump.Slice). It never
// waits for a copy.
func (j *copyJob) slice(id meta.SliceID, size uint32) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.seen[id] || j.closed {
		return
	}
	j.seen[id] = true
	bs := j.c.src.Format.BlockSize
	for i := range data.BlockCount(bs, size) {
		n := data.BlockLen(bs, size, i)
		j.queue = append(j.queue, block{key: data.BlockKey(id, i, n), size: n})
	}
	j.cond.Broadcast()
}

// work copies queued blocks dest lacks until the job is closed and its
// queue empty, or it fails.
func (j *copyJob) work() {
	defer j.wg.Done()
	<-j.ready
	for {
		b, ok := j.next()
		if !ok {
			return
		}
		if j.c.present.has(b) {
			continue
		}
		n, err := copyObject(object.WithSyncBatch(j.ctx, &j.c.batch), j.c.src.Store, j.c.dest, b.key, b.size)
		if err != nil {
			j.cancel(err)
			j.close()
			return
		}
		j.c.present.add(b.key, n)
		j.mu.Lock()
		j.copied++
		j.bytes += n
		j.mu.Unlock()
		j.c.p.Add(1)
	}
}

// next takes a block off the queue, waiting for one; false once the job
// is closed and the queue empty, or failed.
func (j *copyJob) next() (block, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for len(j.queue) == 0 && !j.closed {
		j.cond.Wait()
	}
	if len(j.queue) == 0 || j.ctx.Err() != nil {
		return block{}, false
	}
	b := j.queue[0]
	j.queue = j.queue[1:]
	return b, true
}

func (j *copyJob) close() {
	j.mu.Lock()
	j.closed = true
	j.mu.Unlock()
	j.cond.Broadcast()
}

// wait closes the job, waits for its queue to be copied, and returns
// why it failed (nil if it did not).
func (j *copyJob) wait() error {
	j.close()
	j.wg.Wait()
	<-j.ready
	err := context.Cause(j.ctx)
	j.cancel(nil)
	return err
}

// finishBlocks ends a copy job filled with the blocks of slices, copies
// any of them still lacking, and records the counts in the manifest and
// the backup's block index.
func (c *creation) finishBlocks(ctx context.Context, j *copyJob, slices map[meta.SliceID]uint32) error {
	if err := j.wait(); err != nil {
		return err
	}
	all := blocksOf(slices, c.src.Format.BlockSize)
	var rest []block // none unless a slice never reached the job
	for _, b := range all {
		if !c.present.has(b) {
			rest = append(rest, b)
		}
	}
	n, err := copyBlocks(object.WithSyncBatch(ctx, &c.batch), c.src.Store, c.dest, rest, c.o.Jobs, c.p, c.present.add)
	if err != nil {
		return err
	}
	c.m.Blocks, c.m.Copied, c.m.CopiedBytes = int64(len(all)), j.copied+int64(len(rest)), j.bytes+n
	c.m.Stored = 0
	for _, b := range all {
		c.m.Stored += c.present.stored(b.key)
	}
	c.index = c.present.indexOf(slices)
	return nil
}
