package sqlkv

import (
	"context"
	"database/sql"
	"errors"
)

// pool is a database's connections as the shared code uses them: begin a
// transaction, run the prepared statements (indexed by stmtGet...) and ad
// hoc SQL in it, commit or roll back. PostgreSQL goes through database/sql
// (sqlPool, below); SQLite uses the driver's connections directly
// (litePool, litepool.go), because database/sql costs an embedded
// database more than the query itself (see there).
type pool interface {
	// prepare prepares the statements, indexed like stmts ("" = none).
	prepare(ctx context.Context, queries [numStmts]string) error
	// begin starts a transaction: read-write (writers queue for SQLite's
	// one writer connection) or read-only.
	begin(ctx context.Context, readOnly bool) (conn, error)
	// sync makes every committed transaction durable against power loss
	// (kv.Syncer); a no-op where commits already are.
	sync(ctx context.Context) error
	// query runs prepared read statement i outside any transaction, on
	// a reader connection where there are several: the statement is its
	// own snapshot. fn is called as by conn.query.
	query(ctx context.Context, i int, args []any, fn func(cols [][]byte) error) error
	close() error
}

// conn is one transaction in progress on one connection. It is used by
// one goroutine at a time. Column values passed to a query's fn are the
// caller's to keep.
type conn interface {
	// query runs prepared statement i and calls fn with the columns of
	// each row, as []byte (nil for SQL NULL), until fn returns an error.
	query(i int, args []any, fn func(cols [][]byte) error) error
	// exec runs prepared statement i.
	exec(i int, args ...any) error
	// execSQL runs an ad hoc statement (DDL, an advisory lock).
	execSQL(query string, args ...any) error
	// queryInt runs an ad hoc query for one integer; ok is false when it
	// returned no row.
	queryInt(query string, args ...any) (v int64, ok bool, err error)
	commit() error
	// rollback ends the transaction if it is still open; it is a no-op
	// after commit.
	rollback()
}

// sqlPool is a pool over database/sql (PostgreSQL through pgx): one pool
// of connections for Txn and View, every transaction with opts.
type sqlPool struct {
	db    *sql.DB
	opts  func(readOnly bool) *sql.TxOptions
	stmts stmts
}

var _ pool = (*sqlPool)(nil)

// stmts are a database/sql pool's prepared statements, indexed by
// stmtGet... database/sql prepares each once per connection and keeps it.
type stmts [numStmts]*sql.Stmt

func (p *sqlPool) prepare(ctx context.Context, queries [numStmts]string) error {
	for i, q := range queries {
		if q == "" {
			continue
		}
		stmt, err := p.db.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		p.stmts[i] = stmt
	}
	return nil
}

func (p *sqlPool) begin(ctx context.Context, readOnly bool) (conn, error) {
	tx, err := p.db.BeginTx(ctx, p.opts(readOnly))
	if err != nil {
		return nil, err
	}
	return &sqlConn{ctx: ctx, tx: tx, stmts: &p.stmts}, nil
}

// sync: a PostgreSQL commit is as durable as the server is configured to
// make it.
func (p *sqlPool) sync(context.Context) error { return nil }

func (p *sqlPool) query(ctx context.Context, i int, args []any, fn func(cols [][]byte) error) error {
	rows, err := p.stmts[i].QueryContext(ctx, args...)
	if err != nil {
		return err
	}
	return eachRow(rows, fn)
}

func (p *sqlPool) close() error {
	var errs []error
	for _, stmt := range p.stmts {
		if stmt != nil {
			errs = append(errs, stmt.Close())
		}
	}
	errs = append(errs, p.db.Close())
	return errors.Join(errs...)
}

// sqlConn is a database/sql transaction.
type sqlConn struct {
	ctx   context.Context
	tx    *sql.Tx
	stmts *stmts
	bound [numStmts]*sql.Stmt // stmts bound to tx, made on first use
}

func (c *sqlConn) stmt(i int) *sql.Stmt {
	if c.bound[i] == nil {
		c.bound[i] = c.tx.StmtContext(c.ctx, c.stmts[i])
	}
	return c.bound[i]
}

func (c *sqlConn) query(i int, args []any, fn func(cols [][]byte) error) error {
	rows, err := c.stmt(i).QueryContext(c.ctx, args...)
	if err != nil {
		return err
	}
	return eachRow(rows, fn)
}

// eachRow calls fn with the columns of each row, as []byte, and closes
// rows.
func eachRow(rows *sql.Rows, fn func(cols [][]byte) error) error {
	defer rows.Close()
	names, err := rows.Columns()
	if err != nil {
		return err
	}
	for rows.Next() {
		cols := make([][]byte, len(names))
		ptrs := make([]any, len(names))
		for j := range cols {
			ptrs[j] = &cols[j]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if err := fn(cols); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (c *sqlConn) exec(i int, args ...any) error {
	_, err := c.stmt(i).ExecContext(c.ctx, args...)
	return err
}

func (c *sqlConn) execSQL(query string, args ...any) error {
	_, err := c.tx.ExecContext(c.ctx, query, args...)
	return err
}

func (c *sqlConn) queryInt(query string, args ...any) (int64, bool, error) {
	var v int64
	err := c.tx.QueryRowContext(c.ctx, query, args...).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return v, err == nil, err
}

func (c *sqlConn) commit() error { return c.tx.Commit() }

func (c *sqlConn) rollback() { _ = c.tx.Rollback() }
