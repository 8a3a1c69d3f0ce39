package identity

import (
	"context"
	"fmt"

	"shoal/internal/meta"
	"shoal/internal/object"
)

// Guard returns s with Delete refused (with Exclusive's error) unless
// volume f claims the bucket alone. It is for deleters that do not know
// about claims, such as the pruning of metadata backups; each Delete
// lists the claims, so it suits rare deletes only.
func Guard(s object.Store, f meta.Format) object.Store { return &guarded{Store: s, f: f} }

type guarded struct {
	object.Store
	f meta.Format
}

var (
	_ object.Store     = (*guarded)(nil)
	_ object.Unwrapper = (*guarded)(nil)
)

// Delete deletes key only while f is the bucket's sole claimant.
func (g *guarded) Delete(ctx context.Context, key string) error {
	if err := Exclusive(ctx, g.Store, g.f); err != nil {
		return fmt.Errorf("not deleting %s: %w", key, err)
	}
	return g.Store.Delete(ctx, key)
}

// Unwrap returns the guarded store.
func (g *guarded) Unwrap() object.Store { return g.Store }

// String names the guarded store.
func (g *guarded) String() string { return g.Store.String() }
