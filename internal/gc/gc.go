package gc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"shoal/internal/identity"
	"shoal/internal/meta"
	"shoal/internal/object"
)

// PreparedGrace is how old an empty block object (a block name a mount
// made ahead of its Put, filestore/named.go; a block is never empty) must
// be before gc deletes it, whatever the grace, unless the grace is a
// nanosecond or less (a volume known to have no client). A mount writes
// such a name within two minutes of making it or never; the object's
// ModTime is when it was made until then, so a shorter cut-off could
// delete a name a writer is about to fill and commit.
const PreparedGrace = 10 * time.Minute

// DefaultGrace is how old an unreferenced object must be before gc deletes
// it (see the package doc).
const DefaultGrace = time.Hour

// ErrNoScanner is returned when the engine cannot list its slices.
var ErrNoScanner = errors.New("gc: the metadata engine does not support slice scans")

// Options tune a collection.
type Options struct {
	// DryRun reports without deleting anything (the clock probe excepted).
	DryRun bool
	// Grace: unreferenced objects younger than this are kept. Zero means
	// DefaultGrace, so a forgotten field errs on the safe side; for
	// (almost) none, as on a volume known to have no client, use
	// time.Nanosecond.
	Grace time.Duration
	// DeleteFreed also deletes the objects of freed slices and drops them
	// from the freed list (a mount's cleaner normally does this).
	DeleteFreed bool
	// BlockSize is the volume's block size (meta.Format.BlockSize).
	BlockSize int
	// Deletes bounds concurrent object deletes; 0 means 16.
	Deletes int
	// Samples is how many keys of each kind the report lists; 0 means 20.
	Samples int
	// Progress, if set, is updated as gc works.
	Progress *Progress
	// Logger receives warnings; nil means slog.Default().
	Logger *slog.Logger
}

// Count is a number of objects and their stored bytes.
type Count struct {
	Objects int64 `json:"objects"`
	Bytes   int64 `json:"bytes"`
}

// Add counts one object of size bytes.
func (c *Count) Add(size int64) { c.Objects++; c.Bytes += size }

// Missing is a referenced slice with block objects absent from the store.
type Missing struct {
	Slice meta.SliceID `json:"slice"`
	Ino   meta.Ino     `json:"ino"`
	Chunk uint32       `json:"chunk"`
	Keys  []string     `json:"keys"`
}

// Report is what a collection found and did. Byte counts are stored sizes.
type Report struct {
	DryRun     bool      `json:"dry_run"`
	Clock      string    `json:"clock"` // "store" or "local" (see the package doc)
	Start      time.Time `json:"start"` // T0, on that clock
	Cutoff     time.Time `json:"cutoff"`
	SliceRefs  int64     `json:"slice_refs"` // slice records scanned
	Slices     int       `json:"slices"`     // distinct referenced slices
	Orphans    int       `json:"orphans"`    // unlinked inodes still holding data
	Objects    Count     `json:"objects"`    // everything listed under chunks/
	Live       Count     `json:"live"`
	Leaked     Count     `json:"leaked"`       // unreferenced and older than the cutoff
	Young      Count     `json:"young"`        // unreferenced, within grace: kept
	Foreign    Count     `json:"foreign"`      // keys that are not block keys: kept
	Mismatched Count     `json:"mismatched"`   // blocks of live slices the slice does not have: kept
	Freed      int       `json:"freed_slices"` // slices on the freed list
	FreedObjs  Count     `json:"freed_objects"`
	Missing    []Missing `json:"missing,omitempty"`
	MissingN   int       `json:"missing_objects"`
	Problems   []string  `json:"problems,omitempty"` // metadata damage other than missing objects
	Reprieved  int64     `json:"reprieved"`          // leaked objects whose slice became referenced
	// Postponed counts leaked objects kept because slices were copied
	// (copy_file_range, a clone or a snapshot) while gc scanned.
	Postponed int64 `json:"postponed"`
	Deleted   Count `json:"deleted"`         // leaked objects deleted
	FreedDel  Count `json:"freed_deleted"`   // objects of freed slices deleted
	FreedGone int   `json:"freed_forgotten"` // freed slices dropped from the freed list
	// TempRemoved counts the store's stale temporary files removed
	// (StaleTempAge): left by killed writers.
	TempRemoved int      `json:"temp_removed"`
	Failures    []string `json:"failures,omitempty"`
	LeakedKeys  []string `json:"leaked_sample,omitempty"`
	YoungKeys   []string `json:"young_sample,omitempty"`
	Foreigners  []string `json:"foreign_sample,omitempty"`
	// MismatchedKeys samples Mismatched.
	MismatchedKeys []string `json:"mismatched_sample,omitempty"`
	// Refused says why nothing was deleted although this was no dry run.
	Refused string `json:"refused,omitempty"`
	// Shared says which other volumes claim the bucket (internal/identity):
	// their blocks count as leaked here, and nothing may be deleted.
	Shared string `json:"shared,omitempty"`
}

// Damaged reports whether the metadata refers to data that is gone or is
// inconsistent.
func (r *Report) Damaged() bool { return r.MissingN > 0 || len(r.Problems) > 0 }

// Run collects garbage in store for the volume whose metadata is eng. It
// returns the report even with an error, as far as gc got. Failed deletes
// are listed in Report.Failures and make Run return an error at the end.
func Run(ctx context.Context, eng meta.Engine, store object.Store, o Options) (*Report, error) {
	sc, ok := eng.(meta.Scanner)
	if !ok {
		return nil, ErrNoScanner
	}
	o = o.withDefaults()
	c := &collector{eng: eng, sc: sc, store: store, o: o, log: o.Logger,
		rep: &Report{DryRun: o.DryRun}, prog: o.Progress}
	if err := c.run(ctx); err != nil {
		return c.rep, err
	}
	if n := len(c.rep.Failures); n > 0 {
		return c.rep, fmt.Errorf("gc: %d deletes failed, first: %s", n, c.rep.Failures[0])
	}
	return c.rep, nil
}

// noClients reports a grace of a nanosecond or less: the caller knows no
// client writes to the volume, so the floors for a mount's prepared names
// (PreparedGrace) and temporary files (StaleTempAge) do not apply.
func (o Options) noClients() bool { return o.Grace <= time.Nanosecond }

// atLeast is the grace raised to floor, unless no client writes
// (noClients).
func (o Options) atLeast(floor time.Duration) time.Duration {
	if o.noClients() {
		return o.Grace
	}
	return max(o.Grace, floor)
}

func (o Options) withDefaults() Options {
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.BlockSize <= 0 || o.BlockSize > meta.MaxBlockSize {
		o.BlockSize = meta.MaxBlockSize
	}
	if o.Deletes <= 0 {
		o.Deletes = 16
	}
	if o.Samples <= 0 {
		o.Samples = 20
	}
	if o.Progress == nil {
		o.Progress = &Progress{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// collector holds one run's state.
type collector struct {
	eng   meta.Engine
	sc    meta.Scanner
	store object.Store
	o     Options
	log   *slog.Logger
	rep   *Report
	prog  *Progress

	copies    uint64                  // the engine's copy counter before the scan
	freed     map[meta.SliceID]uint32 // freed list: id → size
	refs      map[meta.SliceID]*ref   // referenced slices
	leaked    []object.Info           // leaked objects to delete
	freedObjs []object.Info           // listed objects of freed slices

}

// run is the step outline of the package doc.
func (c *collector) run(ctx context.Context) error {
	if err := c.exclusive(ctx); err != nil {
		return err
	}
	if err := c.clock(ctx); err != nil {
		return err
	}
	if err := c.readFreed(ctx); err != nil {
		return err
	}
	if err := c.scan(ctx); err != nil {
		return err
	}
	if err := c.list(ctx); err != nil {
		return err
	}
	if err := c.checkMissing(ctx); err != nil {
		return err
	}
	c.prog.Set("done", 0, 0)
	if c.o.DryRun {
		return nil
	}
	if c.rep.Slices > 0 && c.rep.Live.Objects == 0 {
		c.rep.Refused = fmt.Sprintf("the store %s holds none of the %d slices the metadata refers to: is it the volume's store?", c.store, c.rep.Slices)
		return nil
	}
	if err := c.exclusive(ctx); err != nil {
		return err // a claim appeared while gc ran
	}
	if err := c.deleteLeaked(ctx); err != nil {
		return err
	}
	c.removeTemp(ctx)
	if c.o.DeleteFreed {
		return c.deleteFreed(ctx)
	}
	return nil
}

// exclusive checks that this volume is its bucket's only claimant
// (identity.Exclusive); if not, a dry run notes it and any other run is
// refused with identity's explanation, before anything is deleted.
func (c *collector) exclusive(ctx context.Context) error {
	f, err := c.eng.Load(ctx)
	if err != nil {
		return fmt.Errorf("gc: reading the volume settings: %w", err)
	}
	if c.o.DryRun {
		// A dry run writes no claim: the store may be read-only.
		claims, lerr := identity.List(ctx, c.store)
		if lerr != nil {
			return lerr
		}
		err = identity.Judge(c.store, f, claims)
	} else {
		err = identity.Exclusive(ctx, c.store, f)
	}
	if err == nil || !(errors.Is(err, identity.ErrShared) || errors.Is(err, identity.ErrNotClaimant)) {
		return err
	}
	c.rep.Shared = err.Error()
	if c.o.DryRun {
		return nil
	}
	c.rep.Refused = "the bucket is not this volume's alone (see above)"
	return fmt.Errorf("gc: refusing to delete: %w", err)
}

// sample appends key to *keys while it holds fewer than Samples.
func (c *collector) sample(keys *[]string, key string) {
	if len(*keys) < c.o.Samples {
		*keys = append(*keys, key)
	}
}
