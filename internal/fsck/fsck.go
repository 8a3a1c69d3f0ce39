package fsck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"shoal/internal/meta"
	"shoal/internal/object"
)

// ErrNoAdmin is returned when the engine lacks the admin interfaces fsck
// needs (meta.Checker and meta.Scanner).
var ErrNoAdmin = errors.New("fsck: the metadata engine cannot check or scan a volume")

// Options tune a check.
type Options struct {
	// Repair lets the engine fix metadata problems and, with ZeroDamaged,
	// turns damaged file ranges into holes. Meant for an unmounted volume.
	Repair bool
	// VerifyData reads every block in full and verifies its checksums;
	// without it only presence and stored sizes are checked.
	VerifyData bool
	// ZeroDamaged (with Repair) punches the ranges of files that show a
	// missing or corrupt block, so they read as zeros instead of EIO.
	ZeroDamaged bool
	// BlockSize is the volume's block size (meta.Format.BlockSize).
	BlockSize int
	// Readers bounds concurrent block reads; 0 means 8.
	Readers int
	// Samples is how many keys of each kind the report lists; 0 means 20.
	Samples int
	// Progress, if set, is updated as fsck works.
	Progress *Progress
	// Logger receives warnings; nil means slog.Default().
	Logger *slog.Logger
	// Blocks reads blocks as a mount does (volume.BlockStore over the
	// store given to Run: checksums, decompression, decryption as the
	// volume has them); nil means object.WithChecksum of that store.
	Blocks object.Store
	// SizeOK says whether stored bytes can be the stored size of a block
	// of n bytes (volume.StoredSizeOK: one size for plain and encrypted
	// blocks, a range for compression frames); nil means exactly
	// object.StoredSize (checksummed blocks).
	SizeOK func(stored, n int64) bool
}

func (o Options) withDefaults() Options {
	if o.BlockSize <= 0 || o.BlockSize > meta.MaxBlockSize {
		o.BlockSize = meta.MaxBlockSize
	}
	if o.Readers <= 0 {
		o.Readers = 8
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
	if o.SizeOK == nil {
		o.SizeOK = func(stored, n int64) bool { return stored == object.StoredSize(n) }
	}
	return o
}

// Count is a number of objects and their bytes.
type Count struct {
	Objects int64 `json:"objects"`
	Bytes   int64 `json:"bytes"`
}

// Add counts one object of size bytes.
func (c *Count) Add(size int64) { c.Objects++; c.Bytes += size }

// Kinds of block damage.
const (
	Missing   = "missing"    // no object under the block's key
	WrongSize = "wrong size" // the stored size does not match the block's length
	Corrupt   = "corrupt"    // the object fails its checksums
)

// Block is one damaged block of a referenced slice.
type Block struct {
	Key    string       `json:"key"`
	Slice  meta.SliceID `json:"slice"`
	Index  int          `json:"index"` // block index in the slice
	Kind   string       `json:"kind"`  // Missing, WrongSize or Corrupt
	Detail string       `json:"detail,omitempty"`
	// Shadowed: no file reads this block any more (later writes or a
	// zeroing repair cover it), so it harms nothing; compaction or the
	// file's deletion drops it.
	Shadowed bool `json:"shadowed,omitempty"`
}

// File is a file that shows damaged data.
type File struct {
	Ino   meta.Ino `json:"ino"`
	Paths []string `json:"paths"` // empty for an unlinked (orphan) inode
	// Ranges are the byte ranges of the file that read damaged blocks.
	Ranges []Range  `json:"ranges"`
	Keys   []string `json:"keys"`
	Zeroed bool     `json:"zeroed,omitempty"` // the ranges were punched into holes
}

// Range is a byte range of a file: [Off, Off+Len).
type Range struct {
	Off uint64 `json:"off"`
	Len uint64 `json:"len"`
}

// Report is what a check found and did.
type Report struct {
	Meta      meta.CheckReport `json:"metadata"`
	Verified  bool             `json:"verified"` // blocks were read in full
	Slices    int              `json:"slices"`
	SliceRefs int64            `json:"slice_refs"`
	Blocks    int64            `json:"blocks"` // blocks the metadata refers to
	Read      Count            `json:"read"`   // blocks read and verified (data bytes)
	Objects   Count            `json:"objects"`
	Live      Count            `json:"live"`
	Leaked    Count            `json:"leaked"` // no slice refers to them: shoal gc
	// Prepared are empty block objects no slice refers to: names a mount
	// made ahead of its writes (filestore/named.go), or a killed mount's
	// leftover ones, which shoal gc deletes. Not counted in Leaked.
	Prepared Count   `json:"prepared"`
	Freed    Count   `json:"freed"` // of freed slices, awaiting deletion
	Odd      Count   `json:"odd"`   // blocks a live slice does not have
	Foreign  Count   `json:"foreign"`
	Damaged  []Block `json:"damaged,omitempty"`
	Files    []File  `json:"files,omitempty"`
	// Repairs says what --repair did, one line each.
	Repairs []string `json:"repairs,omitempty"`
	// Failures are blocks that could not be checked (store errors).
	Failures     []string `json:"failures,omitempty"`
	LeakedSample []string `json:"leaked_sample,omitempty"`
	OddSample    []string `json:"odd_sample,omitempty"`
}

// driftPrefix starts the engine's report of usage counters that differ
// from a recount. Counters are kept as deltas each client adds about once
// a second, so they lag on a mounted volume and drift after a crash
// (docs/format.md): that is expected, not damage, and --repair recounts.
const driftPrefix = "usage counters:"

// CounterDrift reports whether a metadata problem is only usage counter
// drift.
func CounterDrift(problem string) bool { return strings.HasPrefix(problem, driftPrefix) }

// MetaUnrepaired is the number of metadata problems left unrepaired,
// counter drift excepted.
func (r *Report) MetaUnrepaired() int {
	if r.Meta.Repaired > 0 {
		return max(0, len(r.Meta.Problems)-r.Meta.Repaired)
	}
	n := 0
	for _, p := range r.Meta.Problems {
		if !CounterDrift(p) {
			n++
		}
	}
	return n
}

// DataUnrepaired is the number of files that read damaged blocks and were
// not zeroed. A damaged block that every reader's view shadows (later
// writes cover it) harms no read: it is listed in Damaged but not counted.
func (r *Report) DataUnrepaired() int {
	n := 0
	for _, f := range r.Files {
		if !f.Zeroed {
			n++
		}
	}
	return n
}

// Damage reports whether the volume is left damaged: unrepaired metadata
// problems, or files that read damaged blocks.
func (r *Report) Damage() bool { return r.MetaUnrepaired() > 0 || r.DataUnrepaired() > 0 }

// Run checks the volume whose metadata is eng and whose objects are in
// store (the raw store, without the checksum wrapper: fsck adds it where it
// reads blocks). It returns the report even with an error, as far as it
// got.
func Run(ctx context.Context, eng meta.Engine, store object.Store, o Options) (*Report, error) {
	ck, ok1 := eng.(meta.Checker)
	sc, ok2 := eng.(meta.Scanner)
	if !ok1 || !ok2 {
		return nil, ErrNoAdmin
	}
	o = o.withDefaults()
	sums := o.Blocks
	if sums == nil {
		sums = object.WithChecksum(store)
	}
	c := &checker{eng: eng, ck: ck, sc: sc, raw: store, sums: sums,
		o: o, rep: &Report{Verified: o.VerifyData}, prog: o.Progress}
	err := c.run(ctx)
	c.prog.Set("done", 0, 0)
	if err == nil && len(c.rep.Failures) > 0 {
		err = fmt.Errorf("fsck: %d blocks could not be checked, first: %s", len(c.rep.Failures), c.rep.Failures[0])
	}
	return c.rep, err
}

// checker holds one run's state.
type checker struct {
	eng  meta.Engine
	ck   meta.Checker
	sc   meta.Scanner
	raw  object.Store
	sums object.Store
	o    Options
	rep  *Report
	prog *Progress

	freed   map[meta.SliceID]bool
	refs    map[meta.SliceID]*sliceRef
	present map[string]int64 // listed keys of referenced slices → stored size
}

// run is the step outline of the package doc.
func (c *checker) run(ctx context.Context) error {
	c.prog.Set("checking metadata", 0, 0)
	mr, err := c.ck.Check(ctx, c.o.Repair)
	c.rep.Meta = mr
	if err != nil {
		return fmt.Errorf("fsck: metadata check: %w", err)
	}
	if mr.Repaired > 0 {
		c.rep.Repairs = append(c.rep.Repairs, fmt.Sprintf("metadata: the engine fixed %d problems", mr.Repaired))
	}
	steps := []func(context.Context) error{c.readFreed, c.scan, c.list, c.checkBlocks, c.findFiles}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	if c.o.Repair && c.o.ZeroDamaged && len(c.rep.Damaged) > 0 {
		return c.zeroDamaged(ctx)
	}
	return nil
}

// sample appends key to *keys while it holds fewer than Samples.
func (c *checker) sample(keys *[]string, key string) {
	if len(*keys) < c.o.Samples {
		*keys = append(*keys, key)
	}
}
