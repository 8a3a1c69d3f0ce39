package sqlkv

import "context"

// pool is a database's connections as the shared code uses them: begin a
// transaction, run the prepared statements (indexed by stmtGet...) and ad
// hoc SQL in it, commit or roll back. Neither engine goes through
// database/sql: SQLite uses the driver's connections directly (litePool,
// litepool.go), because database/sql costs an embedded database more
// than the query itself; PostgreSQL uses pgx's pool (pgPool, pgpool.go),
// to pipeline a transaction's statements.
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
// caller's to keep; the slice holding them is reused for the next row.
type conn interface {
	// query runs prepared statement i and calls fn with the columns of
	// each row, as []byte (nil for SQL NULL), until fn returns an error.
	query(i int, args []any, fn func(cols [][]byte) error) error
	// exec runs prepared statement i, a write. A dialect may queue it
	// and send it with the next query or commit (pgpool.go), which then
	// report its error.
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
