package sqlkv

import (
	"context"
	"strings"

	"shoal/internal/meta/kv"
)

var _ kv.Syncer = (*Store)(nil)

// Sync implements kv.Syncer. SQLite commits in WAL mode with
// synchronous=NORMAL are durable against a crash of the process at once,
// but against power loss only once the WAL is synced; a passive
// checkpoint syncs the WAL (and then the database) without waiting for
// readers. PostgreSQL commits are already as durable as the server is
// configured to make them, so Sync has nothing to do there.
func (s *Store) Sync(ctx context.Context) error {
	if !strings.HasPrefix(s.dialect.name(), "sqlite") {
		return nil
	}
	if err := s.pool.exec(ctx, "PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
		return s.wrap("sync", err)
	}
	return nil
}
