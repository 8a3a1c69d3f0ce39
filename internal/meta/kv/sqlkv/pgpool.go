package sqlkv

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PostgreSQL's pool: pgx's own (pgxpool), without database/sql, so that a
// transaction's statements can be pipelined. Over a network each round
// trip costs more than the statement it carries, and an engine operation
// is short: BEGIN, a few reads, its writes, COMMIT. So a pgConn sends
// nothing at begin and nothing at a write (exec): it queues them, and
// sends the queue ahead of the next statement that needs an answer (a
// read) or ahead of COMMIT, in one pipeline (pgx.Batch: one network write,
// one Sync). BEGIN thus travels with the first read, the writes with
// COMMIT, and a transaction that reads twice and writes costs three round
// trips instead of five or six. The server runs the statements in order,
// as if sent one by one, and stops at the first error (the rest are
// skipped up to the Sync), which is then reported by the call that sent
// the queue: a failed write by the next read or by commit. Statements are
// prepared once per connection by pgx's statement cache.

// pgBegin and pgBeginRO begin Txn and View transactions (see the package
// doc for SERIALIZABLE). READ WRITE is explicit: a session's default is
// read-only (pgSessionSettings).
const (
	pgBegin   = "BEGIN ISOLATION LEVEL SERIALIZABLE READ WRITE"
	pgBeginRO = "BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY"
)

// pgRollbackTimeout bounds a ROLLBACK on a server that stopped answering;
// the connection is then closed, which rolls back too.
const pgRollbackTimeout = 30 * time.Second

// errRolledBack is a COMMIT the server answered with ROLLBACK: the
// transaction had failed earlier (never expected: the first error stops
// the pipeline and is reported).
var errRolledBack = errors.New("sqlkv: COMMIT answered ROLLBACK")

// pgPool is a pgxpool with the statements' SQL.
type pgPool struct {
	db      *pgxpool.Pool
	queries [numStmts]string
}

var _ pool = (*pgPool)(nil)

func (p *pgPool) prepare(_ context.Context, queries [numStmts]string) error {
	p.queries = queries
	return nil
}

func (p *pgPool) begin(ctx context.Context, readOnly bool) (conn, error) {
	pc, err := p.db.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	c := &pgConn{ctx: ctx, pc: pc, queries: &p.queries}
	if readOnly {
		c.batch.Queue(pgBeginRO)
	} else {
		c.batch.Queue(pgBegin)
	}
	return c, nil
}

// sync: a PostgreSQL commit is as durable as the server is configured to
// make it.
func (p *pgPool) sync(context.Context) error { return nil }

// query runs statement i alone, in the implicit transaction PostgreSQL
// wraps around a statement sent outside BEGIN, which the session settings
// make SERIALIZABLE READ ONLY (pgSessionSettings): the transaction a View
// runs, in one round trip with no BEGIN or COMMIT statement for the
// server to run. The implicit COMMIT happens before the server says it is
// ready for the next query, and pgx reads up to that point before the
// last Next returns false: an error of the COMMIT (a serialization
// failure) is then rows.Err's, so fn's rows count only if query returns
// nil (a serializable read is valid once its transaction committed), and
// are the caller's to drop otherwise.
func (p *pgPool) query(ctx context.Context, i int, args []any, fn func(cols [][]byte) error) error {
	rows, err := p.db.Query(ctx, p.queries[i], args...)
	if err != nil {
		return err
	}
	return eachPgRow(rows, fn)
}

// close closes the pool's connections.
func (p *pgPool) close() error {
	p.db.Close()
	return nil
}

// pgConn is one transaction on one pooled connection. batch holds the
// statements not sent yet (BEGIN first, until the first send); sent says
// whether anything went to the server.
type pgConn struct {
	ctx     context.Context
	pc      *pgxpool.Conn
	queries *[numStmts]string
	batch   pgx.Batch
	sent    bool
	ended   bool // committed, or released
}

var _ conn = (*pgConn)(nil)

// send sends the queued statements and then last (with args), in one
// pipeline, and reads their results: rowsFn reads last's rows if it is
// not nil; otherwise last is run for its command tag, returned. An error
// of any statement is returned; the transaction is then aborted. When the
// server refused a statement before last (a *pgconn.PgError), last was
// skipped, never run: the error is then an *earlyError.
func (c *pgConn) send(last string, args []any, rowsFn func(pgx.Rows) error) (pgconn.CommandTag, error) {
	var tag pgconn.CommandTag
	var pgErr *pgconn.PgError
	queued := c.batch.Len()
	c.batch.Queue(last, args...)
	b := c.batch
	c.batch = pgx.Batch{}
	c.sent = true
	br := c.pc.SendBatch(c.ctx, &b)
	err := func() error {
		for range queued {
			if _, err := br.Exec(); err != nil {
				if errors.As(err, &pgErr) {
					return &earlyError{err}
				}
				return err
			}
		}
		if rowsFn == nil {
			var err error
			tag, err = br.Exec()
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		return rowsFn(rows)
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (c *pgConn) query(i int, args []any, fn func(cols [][]byte) error) error {
	_, err := c.send(c.queries[i], args, func(rows pgx.Rows) error { return eachPgRow(rows, fn) })
	return err
}

// eachPgRow calls fn with copies of each row's columns (one allocation a
// row) and closes rows.
func eachPgRow(rows pgx.Rows, fn func(cols [][]byte) error) error {
	defer rows.Close()
	var cols [][]byte // reused: fn keeps values, not cols
	for rows.Next() {
		raw := rows.RawValues()
		if len(cols) != len(raw) {
			cols = make([][]byte, len(raw))
		}
		n := 0
		for _, v := range raw {
			n += len(v)
		}
		buf := make([]byte, 0, n)
		for j, v := range raw {
			cols[j] = nil
			if v != nil {
				start := len(buf)
				buf = append(buf, v...)
				cols[j] = buf[start:len(buf):len(buf)]
			}
		}
		if err := fn(cols); err != nil {
			return err
		}
	}
	return rows.Err()
}

// exec queues a write: it is sent with the next read or with COMMIT.
func (c *pgConn) exec(i int, args ...any) error {
	c.batch.Queue(c.queries[i], args...)
	return nil
}

// execSQL runs an ad hoc statement now (after the queue).
func (c *pgConn) execSQL(query string, args ...any) error {
	_, err := c.send(query, args, nil)
	return err
}

func (c *pgConn) queryInt(query string, args ...any) (int64, bool, error) {
	var v int64
	found := false
	_, err := c.send(query, args, func(rows pgx.Rows) error {
		defer rows.Close()
		if rows.Next() {
			found = true
			if err := rows.Scan(&v); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	return v, found && err == nil, err
}

// earlyError is the server's refusal of a statement sent ahead of
// another in one pipeline: the server skipped the rest.
type earlyError struct{ err error }

func (e *earlyError) Error() string { return e.err.Error() }
func (e *earlyError) Unwrap() error { return e.err }

// commit sends the queued writes and COMMIT in one pipeline; a
// transaction that sent nothing and queued nothing but BEGIN has nothing
// to commit. A failure that surely did not commit is marked
// notCommittedError, so that it is retried like any failure before
// COMMIT: nothing was written to the network (a pooled connection found
// closed), the batch failed before pgx sent it (preparing a statement new
// to the connection, such as the guard of guessed reads, on a connection
// that broke), or the server refused a statement ahead of COMMIT (BEGIN
// on a connection whose server process was terminated, as by a restart;
// the guard of wrong guesses).
func (c *pgConn) commit() error {
	if !c.sent && c.batch.Len() <= 1 {
		c.end()
		return nil
	}
	tag, err := c.send("COMMIT", nil, nil)
	if err == nil && tag.String() == "ROLLBACK" {
		err = errRolledBack
	}
	if err == nil {
		c.end()
	} else {
		var early *earlyError
		var unsent pgx.ErrPreprocessingBatch
		if pgconn.SafeToRetry(err) || errors.As(err, &early) || errors.As(err, &unsent) {
			err = &notCommittedError{err}
		}
	}
	return err
}

// end returns the connection, idle, to the pool.
func (c *pgConn) end() {
	c.ended = true
	c.pc.Release()
}

// rollback ends an uncommitted transaction: ROLLBACK, unless nothing was
// sent. (Sending it in the background, to answer sooner, measured slower:
// the next transaction then needs another connection.)
func (c *pgConn) rollback() {
	if c.ended {
		return
	}
	c.ended = true
	if c.sent {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), pgRollbackTimeout)
		defer cancel()
		if _, err := c.pc.Exec(ctx, "ROLLBACK"); err != nil {
			_ = c.pc.Conn().Close(ctx) // the pool then drops it
		}
	}
	c.pc.Release()
}
