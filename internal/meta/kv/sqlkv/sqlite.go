package sqlkv

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strings"

	"github.com/mattn/go-sqlite3"

	"shoal/internal/meta/kv"
)

// SQLite settings. WAL lets readers run beside the one writer; with
// synchronous=NORMAL a commit appends to the WAL without fsync, so a
// committed transaction survives a process crash or kill -9 (it is in the
// WAL, which the next open replays) but the last few may be lost on power
// failure or an OS crash; the database stays consistent either way.
// busy_timeout makes SQLite itself wait for another process's lock before
// the txn helper's backoff takes over. Write transactions begin IMMEDIATE,
// taking the write lock up front: a deferred transaction that reads and
// then writes can deadlock with another one doing the same, and SQLite
// then fails one of them with SQLITE_BUSY regardless of busy_timeout.
const (
	sqliteWriteParams = "_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=1000&_txlock=immediate&_cache_size=-16000"
	sqliteReadParams  = "_synchronous=NORMAL&_busy_timeout=1000&_query_only=1"
)

// sqliteDialect is one SQLite database file.
type sqliteDialect struct {
	path string
}

var _ dialect = (*sqliteDialect)(nil)

// newSQLite accepts sqlite:///abs/path, sqlite://relative/path and
// sqlite:relative/path.
func newSQLite(u *url.URL) (*sqliteDialect, error) {
	path := u.Host + u.Path
	if u.Opaque != "" {
		path = u.Opaque
	}
	if path == "" || strings.HasSuffix(path, "/") {
		return nil, fmt.Errorf("sqlkv: sqlite META-URL needs a file path, like sqlite:///var/lib/shoal/meta.db")
	}
	if u.RawQuery != "" {
		return nil, fmt.Errorf("sqlkv: sqlite META-URL: unknown parameters %q (only %s is known)", u.RawQuery, retryParam)
	}
	return &sqliteDialect{path: path}, nil
}

func (d *sqliteDialect) name() string { return "sqlite:" + d.path }

// dsn builds a go-sqlite3 file: URI; SQLite decodes %XX in it, so a path
// may hold '?', '#' and '%'.
func (d *sqliteDialect) dsn(params string) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(d.path)
	return "file:" + esc + "?" + params
}

// open opens one writer connection (in-process writers queue for it
// instead of spinning on SQLITE_BUSY) and a pool of query-only readers,
// with the driver directly (see litePool).
func (d *sqliteDialect) open(ctx context.Context) (pool, error) {
	// Metadata names every file: create the database readable by its
	// owner only (SQLite gives the -wal and -shm files the same mode).
	if f, err := os.OpenFile(d.path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		_ = f.Close()
	}
	p, err := openLitePool(d.path, d.dsn(sqliteWriteParams), d.dsn(sqliteReadParams), max(4, runtime.GOMAXPROCS(0)))
	if err != nil {
		return nil, fmt.Errorf("sqlkv: cannot open SQLite database %s (does its directory exist and is it writable?): %w", d.path, err)
	}
	return p, nil
}

// classify: SQLITE_BUSY and SQLITE_LOCKED mean another connection holds a
// conflicting lock; the transaction was not applied.
func (d *sqliteDialect) classify(err error) kv.Class {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked) {
		return kv.Conflict
	}
	return kv.Fatal
}

func (d *sqliteDialect) rebind(query string) string { return query }

// batchQueries: none. A write costs SQLite microseconds in-process, so
// running it at once is as cheap as buffering it.
func (d *sqliteDialect) batchQueries() (string, string, string, string, string) {
	return "", "", "", "", ""
}

func (d *sqliteDialect) schema() []string {
	return []string{
		"CREATE TABLE IF NOT EXISTS shoal_meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
		"CREATE TABLE IF NOT EXISTS shoal_kv (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID",
	}
}

// lockSchema: write transactions are IMMEDIATE, so the database is
// already locked.
func (d *sqliteDialect) lockSchema(conn) error { return nil }

// exclusive: nothing to add. A write transaction begins IMMEDIATE, taking
// the database's one write lock before its first read and keeping it
// until it ends, so every Txn already excludes every other writer, of
// this process (queued for the writer connection) and of others (which
// wait busy_timeout, then retry as a conflict within their retry bound).
func (d *sqliteDialect) exclusive() []string { return nil }

// clockQuery: the database file is on this machine; its clock is ours.
func (d *sqliteDialect) clockQuery() string { return "" }
