package sqlkv

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
	"shoal/internal/tlsconf"
)

// PostgreSQL pool bounds: enough connections for a busy mount's parallel
// operations, few enough to share a server among many mounts.
const (
	pgMaxConns    = 16
	pgIdleTimeout = 5 * time.Minute
)

// schemaLockID is the pg_advisory_xact_lock key serializing schema set-up
// (CREATE TABLE IF NOT EXISTS can collide when two clients run it at once).
const schemaLockID = 0x5e0a1_0001

// pgDialect is one PostgreSQL database. All transactions are SERIALIZABLE
// (see the package doc for why), so a single pool serves Txn and View.
type pgDialect struct {
	cfg           *pgx.ConnConfig
	exclusiveIdle time.Duration // pgExclusiveIdle; tests shorten it
}

var _ dialect = (*pgDialect)(nil)

func newPostgres(u *url.URL) (*pgDialect, error) {
	cfg, err := pgx.ParseConfig(u.String())
	if err != nil {
		return nil, fmt.Errorf("sqlkv: malformed postgres META-URL: %w", err)
	}
	for name, value := range pgSettings {
		if _, set := cfg.RuntimeParams[name]; !set {
			cfg.RuntimeParams[name] = value
		}
	}
	for name, value := range pgSessionSettings {
		cfg.RuntimeParams[name] = value // a META-URL may not weaken these
	}
	return &pgDialect{cfg: cfg, exclusiveIdle: pgExclusiveIdle}, nil
}

// pgSettings are the session settings of Shoal's connections (a META-URL
// parameter of the same name wins). Every statement reads shoal_kv by
// its primary key, and under SERIALIZABLE the plan decides what a
// transaction conflicts with: an index scan takes predicate locks on the
// keys (index pages) it reads, a sequential scan one on the whole table,
// and a bitmap heap scan on the heap pages, so that a transaction
// touching two keys through an array (GetMany, the batched writes) of a
// small table, where the planner prefers those scans, would conflict
// with every concurrent writer and be retried. Index scans only, then,
// with plans made once per prepared statement (generic: the array's
// length does not change the plan).
var pgSettings = map[string]string{
	"enable_seqscan":    "off",
	"enable_bitmapscan": "off",
	"plan_cache_mode":   "force_generic_plan",
}

// pgSessionSettings are the session settings a META-URL cannot change:
// a statement sent outside BEGIN (pgPool.query: GetOne, ReadFollow) runs
// in an implicit transaction of the session's default kind, which must be
// the kind a View begins, SERIALIZABLE READ ONLY. Every explicit BEGIN
// names its isolation level and access mode (pgBegin, pgBeginRO).
var pgSessionSettings = map[string]string{
	"default_transaction_isolation": "serializable",
	"default_transaction_read_only": "on",
}

func (d *pgDialect) name() string {
	return fmt.Sprintf("postgres://%s@%s/%s", d.cfg.User, d.hostPort(), d.cfg.Database)
}

func (d *pgDialect) hostPort() string {
	return net.JoinHostPort(d.cfg.Host, strconv.Itoa(int(d.cfg.Port)))
}

func (d *pgDialect) open(ctx context.Context) (pool, error) {
	cfg, err := pgxpool.ParseConfig("")
	if err != nil {
		return nil, fmt.Errorf("sqlkv: postgres pool: %w", err)
	}
	cfg.ConnConfig = d.cfg
	cfg.MaxConns = pgMaxConns
	cfg.MinConns = 0
	cfg.MaxConnIdleTime = pgIdleTimeout
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		err = db.Ping(ctx)
	}
	if err != nil {
		if db != nil {
			db.Close()
		}
		return nil, d.connectError(err)
	}
	return &pgPool{db: db}, nil
}

// connectError explains a failed first connection.
func (d *pgDialect) connectError(err error) error {
	if hint := tlsconf.Explain(err, d.hostPort(), tlsconf.Hints{CA: "sslrootcert=FILE (with sslmode=verify-full)", Cert: "sslcert=FILE&sslkey=FILE"}); hint != "" {
		return fmt.Errorf("sqlkv: PostgreSQL TLS: %s: %w", hint, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "3D000":
			return fmt.Errorf("sqlkv: PostgreSQL database %q does not exist at %s: create it first (createdb %s): %w", d.cfg.Database, d.hostPort(), d.cfg.Database, err)
		case "28P01", "28000":
			return fmt.Errorf("sqlkv: PostgreSQL at %s refused user %q: check the user and password: %w", d.hostPort(), d.cfg.User, err)
		}
	}
	if d.classify(err) == kv.Unavailable {
		return fmt.Errorf("sqlkv: cannot connect to PostgreSQL: is the server running at %s? %w (%w)", d.hostPort(), meta.ErrUnavailable, err)
	}
	return fmt.Errorf("sqlkv: %s: connect: %w", d.name(), err)
}

// pgExclusiveIdle bounds how long an Exclusive transaction may sit idle
// between statements before the server ends its session, which rolls it
// back and releases its lock. It is what frees other writers when the
// machine running the Exclusive vanishes without closing its connection
// (a process that dies closes it, and the server rolls back at once).
const pgExclusiveIdle = 30 * time.Second

// exclusive: LOCK TABLE shoal_kv IN EXCLUSIVE MODE as the first statement
// that touches a table. EXCLUSIVE conflicts with the ROW EXCLUSIVE lock
// every INSERT and DELETE takes (and with itself), so other writers block
// at their first write until this transaction ends, while plain SELECTs
// (ACCESS SHARE: Views, GetOne, Txn reads) go on. SHARE ROW EXCLUSIVE
// would do as much; EXCLUSIVE also holds off SELECT ... FOR UPDATE/SHARE,
// so a future locking reader waits rather than lock rows of a frozen
// table. Under SERIALIZABLE the snapshot is taken by the first query, not
// by BEGIN, SET or LOCK: it is taken after the lock is granted, so it
// includes every write committed before. A writer blocked meanwhile
// proceeds after the commit and, its snapshot now stale, usually fails
// with 40001 and reruns as any conflict does; a 40001 of the Exclusive
// itself reruns fn in a new transaction that locks again. A session-level
// lock_timeout would make a blocked writer fail with 55P03, which
// classify treats as a conflict; statement_timeout must stay above the
// longest Exclusive.
func (d *pgDialect) exclusive() []string {
	return []string{
		fmt.Sprintf("SET LOCAL idle_in_transaction_session_timeout = %d", d.exclusiveIdle.Milliseconds()),
		"LOCK TABLE shoal_kv IN EXCLUSIVE MODE",
	}
}

// classify: 40001 serialization_failure and 40P01 deadlock_detected roll
// the transaction back, and so does 55P03 lock_not_available (a wait for
// an Exclusive's lock cut short by lock_timeout). Class 08 (connection
// exception), the 57P0x shutdown codes, too_many_connections, network
// errors and 25P03 (the server ended a session idle in a transaction:
// an Exclusive past pgExclusiveIdle) mean the server is, for now, out of
// reach; the transaction did not commit.
func (d *pgDialect) classify(err error) kv.Class {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "40001", pgErr.Code == "40P01", pgErr.Code == "55P03":
			return kv.Conflict
		case strings.HasPrefix(pgErr.Code, "08"), strings.HasPrefix(pgErr.Code, "57P"), pgErr.Code == "53300", pgErr.Code == "25P03":
			return kv.Unavailable
		}
		return kv.Fatal
	}
	if isNetError(err) || pgconn.SafeToRetry(err) {
		return kv.Unavailable
	}
	return kv.Fatal
}

// isNetError reports errors of a connection that broke or never came up.
func isNetError(err error) bool {
	var netErr net.Error
	var connectErr *pgconn.ConnectError
	return errors.As(err, &netErr) || errors.As(err, &connectErr) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
}

// rebind numbers the placeholders: ? → $1, $2, ... (the queries hold no
// literal question marks).
func (d *pgDialect) rebind(query string) string {
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// batchQueries: a transaction's writes are sent as (at most) one upsert
// and one delete over arrays, saving a round trip per write; GetMany
// reads an array of keys (exactly those: no padding to a fixed count);
// ReadFollow reads them and the key one names (pgReadFollow); the guard
// checks guessed reads (pgGuard).
func (d *pgDialect) batchQueries() (string, string, string, string, string) {
	return "INSERT INTO shoal_kv (k, v) SELECT * FROM unnest(?::bytea[], ?::bytea[]) ON CONFLICT (k) DO UPDATE SET v = excluded.v",
		"DELETE FROM shoal_kv WHERE k = ANY(?::bytea[])",
		"SELECT k, v FROM shoal_kv WHERE k = ANY(?::bytea[])",
		pgReadFollow,
		pgGuard
}

// schema: bytea compares bytewise (memcmp), which is the kv key order.
func (d *pgDialect) schema() []string {
	return []string{
		"CREATE TABLE IF NOT EXISTS shoal_meta (name text PRIMARY KEY, value bigint NOT NULL)",
		"CREATE TABLE IF NOT EXISTS shoal_kv (k bytea PRIMARY KEY, v bytea NOT NULL)",
	}
}

func (d *pgDialect) clockQuery() string { return pgClock }

func (d *pgDialect) lockSchema(c conn) error {
	return c.execSQL("SELECT pg_advisory_xact_lock($1)", int64(schemaLockID))
}
