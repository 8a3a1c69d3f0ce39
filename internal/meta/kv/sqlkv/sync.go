package sqlkv

import (
	"context"

	"shoal/internal/meta/kv"
)

var _ kv.Syncer = (*Store)(nil)

// Sync implements kv.Syncer. SQLite commits in WAL mode with
// synchronous=NORMAL are durable against a crash of the process at once,
// but against power loss only once the WAL file is synced, which Sync does
// (checkpoint.go) without waiting for the writer. PostgreSQL commits are
// already as durable as the server is configured to make them, so Sync
// has nothing to do there.
func (s *Store) Sync(ctx context.Context) error {
	if err := s.pool.sync(ctx); err != nil {
		return s.wrap("sync", err)
	}
	return nil
}
