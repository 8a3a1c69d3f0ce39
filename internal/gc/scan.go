package gc

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	"shoal/internal/meta"
	"shoal/internal/object"
)

// ref is a referenced slice: its size, one place that refers to it, and
// how many of its block objects the listing found.
type ref struct {
	size  uint32
	ino   meta.Ino
	chunk uint32
	found int32
}

// clock sets T0 and the cut-off from the store's clock (a probe object's
// ModTime), or the local clock in a dry run that cannot write the probe.
func (c *collector) clock(ctx context.Context) error {
	c.prog.Set("clock", 0, 0)
	t0, err := storeNow(ctx, c.store, c.log)
	c.rep.Clock = "store"
	if err != nil {
		if !c.o.DryRun {
			return fmt.Errorf("gc: reading the object store's clock: %w", err)
		}
		c.log.Warn("gc: cannot write a clock probe; using the local clock", "err", err)
		t0, c.rep.Clock = time.Now(), "local"
	}
	c.rep.Start, c.rep.Cutoff = t0, t0.Add(-c.o.Grace)
	return nil
}

// storeNow puts, heads and deletes a probe object and returns its ModTime.
// A failed delete of the probe is only logged: it leaves a few bytes under
// probe/, which nothing reads.
func storeNow(ctx context.Context, store object.Store, log *slog.Logger) (time.Time, error) {
	key, body := probeKey(), []byte("shoal gc clock probe")
	if err := store.Put(ctx, key, bytes.NewReader(body), int64(len(body))); err != nil {
		return time.Time{}, err
	}
	info, err := store.Head(ctx, key)
	if derr := store.Delete(ctx, key); derr != nil {
		log.Warn("gc: cannot delete the clock probe", "key", key, "err", derr)
	}
	if err == nil && info.ModTime.IsZero() {
		err = fmt.Errorf("store %s reports no modification times", store)
	}
	return info.ModTime, err
}

// readFreed loads the freed list.
func (c *collector) readFreed(ctx context.Context) error {
	c.prog.Set("freed list", 0, 0)
	freed, err := c.eng.FreedSlices(ctx, 0, 0)
	if err != nil {
		return fmt.Errorf("gc: reading freed slices: %w", err)
	}
	c.freed = make(map[meta.SliceID]uint32, len(freed))
	for _, s := range freed {
		c.freed[s.ID] = s.Size
	}
	c.rep.Freed = len(c.freed)
	return nil
}

// scan records every referenced slice, and counts orphans.
func (c *collector) scan(ctx context.Context) error {
	c.prog.Set("scanning metadata", 0, 0)
	c.refs = map[meta.SliceID]*ref{}
	if err := c.readCopies(ctx, &c.copies); err != nil {
		return err
	}
	err := c.sc.ScanSlices(ctx, func(ino meta.Ino, index uint32, s meta.Slice) error {
		c.rep.SliceRefs++
		c.prog.Add(1)
		r, ok := c.refs[s.ID]
		if !ok {
			c.refs[s.ID] = &ref{size: s.Size, ino: ino, chunk: index}
			return nil
		}
		if r.size != s.Size {
			c.problem("slice %d has size %d in inode %d chunk %d but %d in inode %d chunk %d",
				s.ID, s.Size, ino, index, r.size, r.ino, r.chunk)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("gc: scanning slices: %w", err)
	}
	c.rep.Slices = len(c.refs)
	for id := range c.refs {
		if _, ok := c.freed[id]; ok {
			c.problem("slice %d is on the freed list but still referenced (inode %d); its objects are kept", id, c.refs[id].ino)
			delete(c.freed, id)
		}
	}
	orphans, err := c.sc.Orphans(ctx, 0)
	if err != nil {
		return fmt.Errorf("gc: listing orphans: %w", err)
	}
	c.rep.Orphans = len(orphans)
	return nil
}

// problem records metadata damage.
func (c *collector) problem(format string, args ...any) {
	c.rep.Problems = append(c.rep.Problems, fmt.Sprintf(format, args...))
}

func probeKey() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "probe/gc-" + hex.EncodeToString(b[:])
}

// readCopies reads the engine's copy counter (meta.CopyCounter) into n;
// engines without one leave it 0.
func (c *collector) readCopies(ctx context.Context, n *uint64) error {
	cc, ok := c.eng.(meta.CopyCounter)
	if !ok {
		return nil
	}
	v, err := cc.Copies(ctx)
	if err != nil {
		return fmt.Errorf("gc: reading the copy counter: %w", err)
	}
	*n = v
	return nil
}
