package volume

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"shoal/internal/identity"
	"shoal/internal/meta"
	"shoal/internal/object"
)

// LoadMode says what a volume restored from a dump is to its source.
type LoadMode int

const (
	// LoadCopy (the default): the loaded volume is a copy with a new uuid
	// that claims the bucket beside its source. While both claim it,
	// neither deletes objects there.
	LoadCopy LoadMode = iota
	// LoadReplace: the loaded volume takes its source's place. It gets a
	// new uuid too, and the source's claim is released, so the source's
	// engine, should it still exist, can no longer mount the volume.
	LoadReplace
)

// sliceIDJump is the least distance a loaded volume's slice ids move
// away from its source's; a random part up to sliceIDSpread is added so
// that two copies of one dump draw from different ranges too. The source
// would need 2^40 new slices to reach its copy's range; two copies meet
// with odds of (slices written) / 2^52.
const (
	sliceIDJump   = 1 << 40
	sliceIDSpread = 1 << 52
)

// Adopted is what Adopt did.
type Adopted struct {
	Format meta.Format      // the loaded volume, with its new uuid
	Source string           // the uuid the dump carried
	Claims []identity.Claim // the bucket's claims afterwards
	Purged int              // orphans of the dump purged
}

// Adopt makes a volume just restored from a dump into eng a volume of its
// own: it purges the dump's orphans (the restore kept no session, so
// nobody holds them open), gives the volume a new uuid and slice ids
// apart from its source's, and records it in the bucket as mode says.
// The uuid changes before the bucket is touched: should that fail, the
// engine holds a volume the bucket does not know, which Check refuses to
// open (unless the bucket has no claim at all), rather than a twin of the
// source.
func Adopt(ctx context.Context, eng meta.Engine, mode LoadMode) (Adopted, error) {
	src, err := eng.Load(ctx)
	if err != nil {
		return Adopted{}, err
	}
	a := Adopted{Source: src.UUID}
	if a.Purged, err = purgeOrphans(ctx, eng); err != nil {
		return a, err
	}
	if err := jumpSliceIDs(ctx, eng); err != nil {
		return a, err
	}
	f := withoutCredentials(src)
	f.UUID = newUUID()
	if err := eng.Format(ctx, f, true); err != nil {
		return a, fmt.Errorf("giving the loaded volume its own uuid: %w", err)
	}
	a.Format = f
	store, err := OpenObjects(ctx, f, nil)
	if err != nil {
		return a, err
	}
	if err := claimLoaded(ctx, store, src, f, mode); err != nil {
		return a, err
	}
	a.Claims, err = identity.List(ctx, store)
	return a, err
}

// purgeOrphans purges the orphans a restored volume carries: inodes
// unlinked while open when the dump was taken. The dump's sessions were
// not restored (meta.Dumper), so nobody holds them open.
func purgeOrphans(ctx context.Context, eng meta.Engine) (int, error) {
	sc, ok := eng.(meta.Scanner)
	if !ok {
		return 0, nil
	}
	orphans, err := sc.Orphans(ctx, 0)
	if err != nil {
		return 0, fmt.Errorf("listing the dump's orphans: %w", err)
	}
	for i, o := range orphans {
		if err := eng.Purge(ctx, o.Ino); err != nil {
			return i, fmt.Errorf("purging orphan inode %d: %w", o.Ino, err)
		}
	}
	return len(orphans), nil
}

// SliceIDSkipper is an engine that can move its slice id counter forward.
type SliceIDSkipper interface {
	SkipSliceIDs(ctx context.Context, n uint64) error
}

// jumpSliceIDs moves the loaded volume's slice ids away from its
// source's, so that blocks either writes into the shared bucket never
// take the other's keys.
func jumpSliceIDs(ctx context.Context, eng meta.Engine) error {
	sk, ok := eng.(SliceIDSkipper)
	if !ok {
		return errors.New("this metadata engine cannot move its slice ids, so a loaded copy would overwrite its source's blocks")
	}
	return sk.SkipSliceIDs(ctx, sliceIDJump+rand.Uint64N(sliceIDSpread))
}

// claimLoaded writes the loaded volume's claim and, for a replace,
// releases the source's; for a copy of a volume from before claims, it
// first claims the bucket for the source, which keeps its place.
func claimLoaded(ctx context.Context, store object.Store, src, f meta.Format, mode LoadMode) error {
	claims, err := identity.List(ctx, store)
	if err != nil {
		return err
	}
	c := identity.For(f, identity.HowLoad)
	c.Origin = src.UUID
	if mode == LoadReplace {
		c.How = identity.HowReplace
	} else if len(claims) == 0 {
		if err := identity.Put(ctx, store, identity.For(src, identity.HowSource)); err != nil {
			return err
		}
	}
	if err := identity.Put(ctx, store, c); err != nil {
		return err
	}
	if mode == LoadReplace {
		return identity.Release(ctx, store, src.UUID)
	}
	return nil
}
