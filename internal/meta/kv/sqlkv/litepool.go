package sqlkv

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mattn/go-sqlite3"
)

// litePool holds SQLite connections opened with the driver directly, not
// through database/sql. For an embedded database the query itself costs a
// microsecond or two; database/sql adds far more per transaction: a
// goroutine watching every transaction's context, another per result set,
// a context-watching path in the driver, and conversions. Measured on the
// 2-core test machine: a one-key read transaction took 12.5 µs through
// database/sql and 2.4 µs directly, and a FUSE stat paid more than that
// again in goroutine wake-ups. Statements run without a context: SQLite
// statements here are single-row or bounded-page, and cancellation is
// honoured between attempts by the txn helper and while waiting for a
// connection.
//
// One writer connection (Txn begins IMMEDIATE on it, so in-process writers
// queue here instead of spinning on SQLITE_BUSY; those that queue behind
// a running Txn commit as a group, group.go) and a few query-only
// reader connections for View. Each connection keeps its prepared
// statements. A checkpointer (checkpoint.go) keeps the WAL short and
// syncs it, beside the writer.
type litePool struct {
	writer  chan *liteConn // holds the writer while it is free
	readers chan *liteConn // free readers
	all     []*liteConn
	ckpt    *checkpointer
	// closedAll: close closed every connection, so descriptors opened
	// beside them may be closed too (checkpointer.shm).
	closedAll bool
}

var _ pool = (*litePool)(nil)

// liteConn is one SQLite connection and its prepared statements.
type liteConn struct {
	c      *sqlite3.SQLiteConn
	stmts  [numStmts]driver.Stmt
	begin  driver.Stmt // BEGIN IMMEDIATE for the writer, BEGIN for readers
	commit driver.Stmt
	// groupStmts are the writer's savepoint statements (group.go).
	groupStmts [numGroupStmts]driver.Stmt
	// version is the writer's PRAGMA data_version (litecache.go).
	version driver.Stmt
	// scans are stmtScan and stmtScanOpen returning each pair as one
	// value (joinedScans).
	scans [2]driver.Stmt
	pool  chan *liteConn
	ckpt  *checkpointer // the writer's: told of every commit
}

// openLitePool opens the database file at path: the writer and the
// checkpointer's connection with writeDSN, and readers connections with
// readDSN.
func openLitePool(path, writeDSN, readDSN string, readers int) (*litePool, error) {
	p := &litePool{writer: make(chan *liteConn, 1), readers: make(chan *liteConn, readers)}
	drv := &sqlite3.SQLiteDriver{}
	open := func(dsn, begin string, home chan *liteConn) (*liteConn, error) {
		c, err := drv.Open(dsn)
		if err != nil {
			return nil, err
		}
		lc := &liteConn{c: c.(*sqlite3.SQLiteConn), pool: home}
		if lc.begin, err = lc.c.Prepare(begin); err == nil {
			lc.commit, err = lc.c.Prepare("COMMIT")
		}
		if err != nil {
			_ = lc.c.Close()
			return nil, err
		}
		p.all = append(p.all, lc)
		home <- lc
		return lc, nil
	}
	w, err := open(writeDSN, "BEGIN IMMEDIATE", p.writer)
	if err != nil {
		return nil, err
	}
	if _, err := w.c.Exec(fmt.Sprintf("PRAGMA wal_autocheckpoint=%d", writerAutoCheckpoint), nil); err != nil {
		_ = p.close()
		return nil, err
	}
	for i, q := range groupQueries {
		if w.groupStmts[i], err = w.c.Prepare(q); err != nil {
			_ = p.close()
			return nil, err
		}
	}
	if w.version, err = w.c.Prepare("PRAGMA data_version"); err != nil {
		_ = p.close()
		return nil, err
	}
	for range readers {
		if _, err := open(readDSN, "BEGIN", p.readers); err != nil {
			_ = p.close()
			return nil, err
		}
	}
	c, err := drv.Open(writeDSN)
	if err != nil {
		_ = p.close()
		return nil, err
	}
	p.ckpt = newCheckpointer(c.(*sqlite3.SQLiteConn), path)
	w.ckpt = p.ckpt
	return p, nil
}

func (p *litePool) prepare(ctx context.Context, queries [numStmts]string) error {
	for _, lc := range p.all {
		for i, q := range queries {
			if q == "" {
				continue
			}
			st, err := lc.c.Prepare(q)
			if err != nil {
				return err
			}
			lc.stmts[i] = st
		}
		for i, q := range joinedScans {
			st, err := lc.c.Prepare(q)
			if err != nil {
				return err
			}
			lc.scans[i] = st
		}
	}
	return nil
}

// joinedScans are stmtScan and stmtScanOpen with each row's key and value
// as one blob beside the key's length: the driver allocates twice a
// column (the bytes, and the interface holding them) and the cgo call
// per row is most of the rest, so a row of one blob and a small integer
// costs about half a row of two blobs. SQLite's || joins the bytes as
// they are (a blob cast to text in a UTF-8 database keeps its bytes,
// zeros included), and the CAST makes the result a blob again.
var joinedScans = [2]string{
	"SELECT CAST(k || v AS BLOB), length(k) FROM shoal_kv WHERE k >= ? AND k < ? ORDER BY k LIMIT ?",
	"SELECT CAST(k || v AS BLOB), length(k) FROM shoal_kv WHERE k >= ? ORDER BY k LIMIT ?",
}

// scan runs joinedScans[open] and calls fn with each row's key and value
// (slices of one allocation).
func (t *liteTx) scan(open bool, args []any, fn func(k, v []byte)) error {
	st := t.lc.scans[0]
	if open {
		st = t.lc.scans[1]
	}
	rows, err := st.Query(values(args))
	if err != nil {
		return err
	}
	defer rows.Close()
	dest := make([]driver.Value, 2)
	for {
		if err := rows.Next(dest); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		kv, ok := dest[0].([]byte)
		n, ok2 := dest[1].(int64)
		if !ok || !ok2 || n < 0 || n > int64(len(kv)) {
			return fmt.Errorf("sqlkv: scan row: unexpected %T, %T", dest[0], dest[1])
		}
		fn(kv[:n:n], kv[n:])
	}
}

// acquire takes a free connection, waiting for one while ctx allows.
func (p *litePool) acquire(ctx context.Context, readOnly bool) (*liteConn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	from := p.writer
	if readOnly {
		from = p.readers
	}
	select {
	case lc := <-from:
		return lc, nil
	default:
	}
	select {
	case lc := <-from:
		return lc, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *litePool) begin(ctx context.Context, readOnly bool) (conn, error) {
	lc, err := p.acquire(ctx, readOnly)
	if err != nil {
		return nil, err
	}
	if _, err := lc.begin.Exec(nil); err != nil {
		lc.pool <- lc
		return nil, err
	}
	return &liteTx{lc: lc}, nil
}

func (p *litePool) sync(context.Context) error { return p.ckpt.sync() }

func (p *litePool) query(ctx context.Context, i int, args []any, fn func(cols [][]byte) error) error {
	lc, err := p.acquire(ctx, true)
	if err != nil {
		return err
	}
	defer func() { lc.pool <- lc }()
	return lc.query(i, args, fn)
}

// closeWait bounds how long close waits for transactions still running
// in other goroutines to hand their connections back.
const closeWait = 10 * time.Second

// close closes every connection once it is free. A connection still in
// use after closeWait is left open rather than closed under a running
// statement (which SQLite does not survive).
func (p *litePool) close() error {
	var errs []error
	deadline := time.After(closeWait)
	var free []*liteConn
	for range p.all {
		select {
		case lc := <-p.writer:
			free = append(free, lc)
		case lc := <-p.readers:
			free = append(free, lc)
		case <-deadline:
			errs = append(errs, fmt.Errorf("sqlkv: %d connections still in use after %v", len(p.all)-len(free), closeWait))
		}
		if len(errs) > 0 {
			break
		}
	}
	if p.ckpt != nil {
		errs = append(errs, p.ckpt.close())
	}
	for _, lc := range free {
		for _, st := range append(append(append(lc.stmts[:], lc.groupStmts[:]...), lc.scans[:]...), lc.begin, lc.commit, lc.version) {
			if st != nil {
				errs = append(errs, st.Close())
			}
		}
		errs = append(errs, lc.c.Close())
	}
	p.closedAll = len(free) == len(p.all)
	if p.ckpt != nil && p.closedAll {
		// Last: a connection left open keeps its locks (checkpointer.shm).
		p.ckpt.closeFiles()
	}
	return errors.Join(errs...)
}

// liteTx is a transaction on a liteConn; it returns the connection to its
// pool when it ends.
type liteTx struct {
	lc   *liteConn
	done bool
}

func (t *liteTx) query(i int, args []any, fn func(cols [][]byte) error) error {
	return t.lc.query(i, args, fn)
}

// query runs prepared statement i and calls fn with each row's columns.
func (lc *liteConn) query(i int, args []any, fn func(cols [][]byte) error) error {
	rows, err := lc.stmts[i].Query(values(args))
	if err != nil {
		return err
	}
	defer rows.Close()
	dest := make([]driver.Value, len(rows.Columns()))
	cols := make([][]byte, len(dest)) // reused: fn keeps values, not cols
	for {
		if err := rows.Next(dest); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		for j, v := range dest {
			switch v := v.(type) {
			case nil:
				cols[j] = nil
			case []byte:
				cols[j] = v // the driver copied it out of SQLite
			case string:
				cols[j] = []byte(v)
			default:
				return fmt.Errorf("sqlkv: column %d: unexpected %T", j, v)
			}
		}
		if err := fn(cols); err != nil {
			return err
		}
	}
}

func (t *liteTx) exec(i int, args ...any) error {
	_, err := t.lc.stmts[i].Exec(values(args))
	return err
}

func (t *liteTx) execSQL(query string, args ...any) error {
	_, err := t.lc.c.Exec(query, values(args))
	return err
}

// dataVersion runs the writer's PRAGMA data_version: a value that
// changes when another connection (of any process) commits, and not
// when this one does.
func (lc *liteConn) dataVersion() (int64, error) {
	if lc.version == nil {
		return 0, fmt.Errorf("sqlkv: data_version not prepared")
	}
	rows, err := lc.version.Query(nil)
	v, ok, err := firstInt("data_version", rows, err)
	if err == nil && !ok {
		err = fmt.Errorf("sqlkv: data_version: no row")
	}
	return v, err
}

func (t *liteTx) queryInt(query string, args ...any) (int64, bool, error) {
	rows, err := t.lc.c.Query(query, values(args))
	return firstInt(fmt.Sprintf("%q", query), rows, err)
}

// firstInt reads the integer in the first column of the first row of
// the result of the query what names (ok false: no row) and closes the
// rows.
func firstInt(what string, rows driver.Rows, err error) (int64, bool, error) {
	if err != nil {
		return 0, false, err
	}
	defer rows.Close()
	dest := make([]driver.Value, 1)
	if err := rows.Next(dest); err == io.EOF {
		return 0, false, nil
	} else if err != nil {
		return 0, false, err
	}
	v, ok := dest[0].(int64)
	if !ok {
		return 0, false, fmt.Errorf("sqlkv: %s: want an integer, got %T", what, dest[0])
	}
	return v, true, nil
}

// commit commits. A failed COMMIT (SQLITE_BUSY) leaves the transaction
// open; rollback, which the txn helper always calls, ends it.
func (t *liteTx) commit() error {
	_, err := t.lc.commit.Exec(nil)
	if err == nil && t.lc.ckpt != nil {
		t.lc.ckpt.committed()
	}
	return err
}

func (t *liteTx) rollback() {
	if t.done {
		return
	}
	t.done = true
	if !t.lc.c.AutoCommit() {
		_, _ = t.lc.c.Exec("ROLLBACK", nil)
	}
	t.lc.pool <- t.lc
}

// values converts arguments for the driver (which takes int64, not int).
func values(args []any) []driver.Value {
	out := make([]driver.Value, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case int:
			out[i] = int64(v)
		default:
			out[i] = v
		}
	}
	return out
}
