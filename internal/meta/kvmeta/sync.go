package kvmeta

import (
	"context"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

var _ meta.Syncer = (*Engine)(nil)

// Sync implements meta.Syncer through the store's kv.Syncer, if it has one.
func (e *Engine) Sync(ctx context.Context) error {
	if s, ok := e.store.(kv.Syncer); ok {
		return wrap(s.Sync(ctx), "sync")
	}
	return nil
}
