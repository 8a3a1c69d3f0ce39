package sqlkv

import (
	"context"
	"fmt"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

// schemaVersion is the version of the tables this binary reads and
// writes. It is stored in shoal_meta as ('schema_version', N).
//
// Rules: shoal_meta and its schema_version row never change shape. A
// binary opening a database with a higher version refuses it
// (meta.ErrNewerFormat); one finding a lower version upgrades it inside
// setupSchema's transaction before use. Version 1 is the first.
const schemaVersion = 1

// dialect is what differs between SQL databases. Everything else (the
// queries, the txn helper, Scan paging) is shared.
type dialect interface {
	// name is the scheme and location for logs, without secrets.
	name() string
	// open connects, checks the server answers, and returns the pool.
	open(ctx context.Context) (pool, error)
	// classify says whether err is a conflict, a lost server, or final.
	classify(err error) kv.Class
	// rebind turns ? placeholders into the dialect's.
	rebind(query string) string
	// batchQueries returns an upsert of many (key, value) pairs taking a
	// key array and a value array, a delete taking a key array, a
	// read of the (k, v) rows of a key array (for GetMany),
	// ReadFollow's statement (follow.go) and the guard of guessed reads
	// (guess.go); or "" for each if the dialect runs each write at once.
	batchQueries() (setMany, deleteMany, getMany, readFollow, guard string)
	// schema returns the statements creating the tables if absent, after
	// serializing concurrent set-ups where the database needs it.
	schema() []string
	// lockSchema serializes schema set-up among clients, in c.
	lockSchema(c conn) error
	// exclusive returns the statements that start an Exclusive
	// transaction after BEGIN: from their end until commit, no other
	// transaction may commit a write.
	exclusive() []string
	// clockQuery returns one integer, the server's clock in microseconds
	// since the epoch; "" where the local clock is the database's.
	clockQuery() string
}

// setupSchema creates the tables if absent and checks the version. It runs
// through the txn helper, so it is retried like any transaction.
func (s *Store) setupSchema(ktx kv.Tx) error {
	t := ktx.(*tx)
	if err := s.dialect.lockSchema(t.c); err != nil {
		return t.fail(err)
	}
	for _, ddl := range s.dialect.schema() {
		if err := t.c.execSQL(ddl); err != nil {
			return t.fail(err)
		}
	}
	v, found, err := t.c.queryInt(s.dialect.rebind("SELECT value FROM shoal_meta WHERE name = ?"), "schema_version")
	switch {
	case err != nil:
		return t.fail(err)
	case !found:
		err = t.c.execSQL(s.dialect.rebind("INSERT INTO shoal_meta (name, value) VALUES (?, ?)"), "schema_version", int64(schemaVersion))
		if err != nil {
			return t.fail(err)
		}
		return nil
	case v > schemaVersion:
		return fmt.Errorf("sqlkv: %s: schema version %d is newer than this binary's %d, upgrade Shoal: %w", s.name, v, schemaVersion, meta.ErrNewerFormat)
	case v < 1:
		return fmt.Errorf("sqlkv: %s: invalid schema version %d in shoal_meta", s.name, v)
	}
	return nil // v == schemaVersion: nothing to upgrade yet
}
