package sqlkv

import (
	"context"
	"fmt"
	"time"

	"shoal/internal/meta/kv"
)

var _ kv.Clock = (*Store)(nil)

// pgClock reads PostgreSQL's wall clock, in microseconds since the epoch.
// clock_timestamp, not now(): now() is the start of the transaction.
const pgClock = "SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint"

// Now implements kv.Clock: the database server's clock for PostgreSQL; the
// local clock for SQLite, whose database lives on this machine.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	q := s.dialect.clockQuery()
	if q == "" {
		return time.Now(), nil
	}
	var us int64
	err := s.View(ctx, func(ktx kv.Tx) error {
		t := ktx.(*tx)
		v, ok, err := t.c.queryInt(q)
		if err != nil {
			return t.fail(err)
		}
		if !ok {
			return fmt.Errorf("sqlkv: %s: clock query returned no row", s.name)
		}
		us = v
		return nil
	})
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMicro(us), nil
}
