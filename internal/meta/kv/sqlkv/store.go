package sqlkv

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"shoal/internal/meta/kv"
)

// DefaultRetryTimeout bounds how long one Txn or View keeps retrying
// conflicts and connection failures before it gives up.
const DefaultRetryTimeout = 30 * time.Second

// retryParam is the META-URL query parameter overriding the retry bound,
// as a Go duration ("retry_timeout=5s"). It is removed before the URL
// reaches the database driver.
const retryParam = "retry_timeout"

// errClosed is returned by Txn and View after Close.
var errClosed = errors.New("sqlkv: store is closed")

// Options tune a Store. The zero value means the defaults.
type Options struct {
	// RetryTimeout bounds the total time one Txn or View spends retrying
	// (default DefaultRetryTimeout). The URL's retry_timeout wins.
	RetryTimeout time.Duration
}

// Store is a kv.Store over one SQL table. It is safe for concurrent use.
type Store struct {
	name         string
	dialect      dialect
	pool         pool
	retryTimeout time.Duration
	closed       atomic.Bool
	batching     bool       // the dialect buffers writes (batch.go)
	guesses      *guesses   // Txns guess reads (guess.go); nil: they do not
	group        *committer // Txns commit in groups (group.go); nil: they do not
	lite         *liteCache // SQLite's cache (litecache.go); nil: none
}

var (
	_ kv.Store    = (*Store)(nil)
	_ kv.Excluder = (*Store)(nil)
	_ kv.Cacher   = (*Store)(nil)

	_ kv.AbsentGuesser = (*Store)(nil)
	_ kv.AbsentKnower  = (*Store)(nil)
)

// CacheKeys implements kv.Cacher: on SQLite, the keys under prefixes are
// kept (litecache.go) and point reads (GetOne, ReadFollow, KnownAbsent)
// answered from there while no other process has committed: the answer
// is the database's state at that instant, so it needs no meta.Cached
// (an open may use it too); on PostgreSQL they are only guessed
// (guess.go), and nothing is answered from memory without the database.
func (s *Store) CacheKeys(prefixes ...[]byte) {
	if s.lite != nil {
		s.lite.setPrefixes(prefixes)
	}
	if s.guesses == nil {
		return
	}
	s.guesses.mu.Lock()
	s.guesses.prefixes = slices.Clone(prefixes)
	for k := range s.guesses.vals {
		if !s.guesses.worth(k) {
			delete(s.guesses.vals, k)
		}
	}
	s.guesses.mu.Unlock()
}

// GuessAbsent implements kv.AbsentGuesser: on PostgreSQL a Txn takes a
// key under prefixes that it has no guess of as absent, a guess like the
// others, which the guard checks (guess.go). SQLite does not guess.
func (s *Store) GuessAbsent(prefixes ...[]byte) {
	if s.guesses == nil {
		return
	}
	s.guesses.mu.Lock()
	s.guesses.absent = make([][]byte, len(prefixes))
	for i, p := range prefixes {
		s.guesses.absent[i] = slices.Clone(p)
	}
	s.guesses.mu.Unlock()
}

// CachedReads implements kv.Cacher.
func (s *Store) CachedReads() int64 {
	if s.lite == nil {
		return 0
	}
	return s.lite.served.Load()
}

// KnownAbsent implements kv.AbsentKnower: on SQLite, a key the cache
// knows absent now (litecache.go).
func (s *Store) KnownAbsent(ctx context.Context, key []byte) bool {
	if s.lite == nil || !s.lite.knownAbsent(key) {
		return false
	}
	served(ctx)
	return true
}

// Open opens (creating the schema if needed) the store a META-URL names:
//
//	sqlite:///abs/path/meta.db      sqlite://relative/path/meta.db
//	postgres://user:pass@host:port/db?sslmode=disable   (or postgresql://)
//
// Errors say what is wrong: a malformed URL, an unknown scheme, a server
// that does not answer (wrapping meta.ErrUnavailable), a missing
// database, or a schema written by a newer Shoal (meta.ErrNewerFormat).
func Open(ctx context.Context, rawURL string) (kv.Store, error) {
	return OpenOptions(ctx, rawURL, Options{})
}

// OpenOptions is Open with options.
func OpenOptions(ctx context.Context, rawURL string, opts Options) (kv.Store, error) {
	u, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	s := &Store{retryTimeout: opts.RetryTimeout}
	if err := s.takeRetryParam(u); err != nil {
		return nil, err
	}
	if s.dialect, err = newDialect(u); err != nil {
		return nil, err
	}
	s.name = s.dialect.name()
	if s.pool, err = s.dialect.open(ctx); err != nil {
		return nil, err
	}
	if err := s.init(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// parseURL parses a META-URL without echoing a password in errors.
func parseURL(rawURL string) (*url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("sqlkv: malformed META-URL: %w", err)
	}
	return u, nil
}

// takeRetryParam applies and removes the retry_timeout URL parameter.
func (s *Store) takeRetryParam(u *url.URL) error {
	q := u.Query()
	if v := q.Get(retryParam); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("sqlkv: META-URL %s=%q: want a positive duration such as 30s", retryParam, v)
		}
		s.retryTimeout = d
	}
	if q.Has(retryParam) {
		q.Del(retryParam)
		u.RawQuery = q.Encode()
	}
	if s.retryTimeout <= 0 {
		s.retryTimeout = DefaultRetryTimeout
	}
	return nil
}

// newDialect picks the dialect by the URL scheme.
func newDialect(u *url.URL) (dialect, error) {
	switch strings.ToLower(u.Scheme) {
	case "sqlite", "sqlite3":
		return newSQLite(u)
	case "postgres", "postgresql":
		return newPostgres(u)
	}
	return nil, fmt.Errorf("sqlkv: unknown META-URL scheme %q: use sqlite:///PATH or postgres://USER@HOST:PORT/DB", u.Scheme)
}

// init sets up the schema, then prepares the statements (which need the
// table to exist).
func (s *Store) init(ctx context.Context) error {
	if err := s.txn(ctx, modeWrite, s.setupSchema); err != nil {
		return err
	}
	all := queries
	var getMany string
	all[stmtSetMany], all[stmtDeleteMany], getMany, all[stmtReadFollow], all[stmtGuard] = s.dialect.batchQueries()
	if getMany != "" {
		all[stmtGetMany] = getMany
	}
	for i, q := range all {
		all[i] = s.dialect.rebind(q)
	}
	if err := s.pool.prepare(ctx, all); err != nil {
		return s.wrap("prepare", err)
	}
	s.batching = all[stmtSetMany] != ""
	if s.batching && all[stmtGuard] != "" {
		s.guesses = newGuesses()
	}
	if _, ok := s.pool.(*litePool); ok {
		s.group = &committer{}
		if d, ok := s.dialect.(*sqliteDialect); ok {
			s.lite = newLiteCache(d.path)
		}
	}
	return nil
}

// queries are the statements, indexed like stmts, with ? placeholders.
var queries = [numStmts]string{
	stmtGet:      "SELECT v FROM shoal_kv WHERE k = ?",
	stmtSet:      "INSERT INTO shoal_kv (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v",
	stmtDelete:   "DELETE FROM shoal_kv WHERE k = ?",
	stmtScan:     "SELECT k, v FROM shoal_kv WHERE k >= ? AND k < ? ORDER BY k LIMIT ?",
	stmtScanOpen: "SELECT k, v FROM shoal_kv WHERE k >= ? ORDER BY k LIMIT ?",
	stmtGetMany:  "SELECT k, v FROM shoal_kv WHERE k IN (?" + strings.Repeat(", ?", getManyBatch-1) + ")",
}

// Txn implements kv.Store.
func (s *Store) Txn(ctx context.Context, fn func(tx kv.Tx) error) error {
	if s.group != nil {
		return s.groupTxn(ctx, fn)
	}
	return s.txn(ctx, modeWrite, fn)
}

// Exclusive implements kv.Excluder: a Txn that begins with the dialect's
// exclusive statements (see the package doc).
func (s *Store) Exclusive(ctx context.Context, fn func(tx kv.Tx) error) error {
	return s.txn(ctx, modeExclusive, fn)
}

// View implements kv.Store.
func (s *Store) View(ctx context.Context, fn func(tx kv.Tx) error) error {
	return s.txn(ctx, modeRead, fn)
}

// SnapshotViews implements kv.SnapshotViewer: SQLite's WAL readers and
// PostgreSQL's transactions read one MVCC snapshot.
func (s *Store) SnapshotViews() bool { return true }

// GetOne implements kv.PointReader: one SELECT outside an explicit
// transaction (on PostgreSQL, in an implicit SERIALIZABLE READ ONLY one),
// retried like a View.
func (s *Store) GetOne(ctx context.Context, key []byte) ([]byte, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	if s.lite != nil {
		r, err := s.lite.readThrough(ctx, nil, [][]byte{key}, func() (followRead, error) {
			v, err := s.getOne(ctx, key)
			return followRead{vals: [][]byte{v}}, err
		})
		if err != nil {
			return nil, err
		}
		return r.vals[0], nil
	}
	v, err := s.getOne(ctx, key)
	if err == nil && s.guesses != nil {
		s.guesses.note(map[string][]byte{string(key): v}, nil, time.Time{})
	}
	return v, err
}

// getOne is GetOne's read of the database.
func (s *Store) getOne(ctx context.Context, key []byte) ([]byte, error) {
	var v []byte
	err := kv.Retry(ctx, "sqlkv: "+s.name, s.retryTimeout, func() (kv.Class, error) {
		var err error
		v, err = getValue(func(i int, args []any, fn func(cols [][]byte) error) error {
			return s.pool.query(ctx, i, args, fn)
		}, key)
		if err != nil {
			return s.dialect.classify(err), s.wrap("get", err)
		}
		return kv.Fatal, nil
	})
	return v, err
}

// Name implements kv.Store: the scheme and location, without a password.
func (s *Store) Name() string { return s.name }

// Close implements kv.Store. Transactions running in other goroutines
// fail; later calls return an error.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return errClosed
	}
	if s.lite != nil {
		defer func() {
			// A connection left open keeps its locks: the cache's -shm
			// descriptor stays open with it (checkpointer.shm).
			if lp, ok := s.pool.(*litePool); !ok || lp.closedAll {
				s.lite.close()
			}
		}()
	}
	if err := s.pool.close(); err != nil {
		return fmt.Errorf("sqlkv: %s: close: %w", s.name, err)
	}
	return nil
}
