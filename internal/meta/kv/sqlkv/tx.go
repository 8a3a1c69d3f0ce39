package sqlkv

import (
	"context"
	"math"
	"time"

	"shoal/internal/meta/kv"
)

// scanPage is how many rows one Scan query fetches. Scan reads a page,
// closes the rows, then calls fn: so fn may use the tx (a PostgreSQL
// connection runs one query at a time) and memory stays bounded.
const scanPage = 256

// statement indexes into stmts and tx.bound.
const (
	stmtGet = iota
	stmtSet
	stmtDelete
	stmtScan       // k >= lo AND k < hi
	stmtScanOpen   // k >= lo (the prefix has no upper bound)
	stmtSetMany    // batched upsert (dialects with arrays only)
	stmtDeleteMany // batched delete (dialects with arrays only)
	stmtGetMany    // k IN (getManyBatch keys)
	stmtReadFollow // keys and the key one names (PostgreSQL only: follow.go)
	stmtGuard      // checks guessed reads (PostgreSQL only: guess.go)
	numStmts
)

// tx is a kv.Tx over one database transaction. Reads and writes go to the
// database at once, so the database itself provides read-your-writes and
// ordering. The first error is kept in err and returned by every later
// call and by the txn helper.
type tx struct {
	ctx      context.Context
	c        conn
	batching bool // buffer writes (batch.go)
	readOnly bool
	pending  map[string]pendingWrite // buffered writes (batching dialects)
	err      error

	// Guessed reads (guess.go): guesses is the store's, in a Txn of a
	// store that guesses; real is set once the transaction sends a
	// statement (no more guessing); guarded holds the guesses made
	// (nil: absent), guardSent whether their guard was queued; read and
	// written are what the transaction read from the database and wrote,
	// noted as guesses when it commits; began is when it began.
	guesses   *guesses
	began     time.Time
	real      bool
	guarded   map[string][]byte
	guardSent bool
	read      map[string][]byte
	written   map[string]pendingWrite

	// The SQLite cache (litecache.go): in a write transaction, lw records
	// what it changed, for lite once it commits, and lg is what the group
	// members before it changed (nil outside a group).
	lite *liteCache
	lw   *liteWrites
	lg   *liteWrites
}

var _ kv.Tx = (*tx)(nil)

// fail keeps the first error.
func (t *tx) fail(err error) error {
	if t.err == nil {
		t.err = err
	}
	return t.err
}

// Get implements kv.Tx.
func (t *tx) Get(key []byte) ([]byte, error) {
	if t.err != nil {
		return nil, t.err
	}
	if t.guessing() {
		if v, ok := t.guess(key); ok {
			return v, nil
		}
	}
	if t.lw != nil {
		if v, ok := t.lite.inTxn(t.lw, t.lg, key); ok {
			return v, nil
		}
	}
	if t.flush() != nil {
		return nil, t.err
	}
	v, err := getValue(t.c.query, key)
	if err != nil {
		return nil, t.fail(err)
	}
	t.seen(key, v)
	return v, nil
}

// getValue runs stmtGet for key through query: the value, nil if absent
// ([]byte{} if present but empty: not the same as absent).
func getValue(query func(i int, args []any, fn func(cols [][]byte) error) error, key []byte) ([]byte, error) {
	var v []byte
	err := query(stmtGet, []any{key}, func(cols [][]byte) error {
		v = cols[0]
		if v == nil {
			v = []byte{}
		}
		return nil
	})
	return v, err
}

// Set implements kv.Tx.
func (t *tx) Set(key, value []byte) {
	if value == nil {
		value = []byte{} // nil would bind as SQL NULL
	}
	t.write(stmtSet, key, value)
}

// Delete implements kv.Tx.
func (t *tx) Delete(key []byte) { t.write(stmtDelete, key) }

// write runs a Set or Delete now, or buffers it when the dialect batches
// writes (see batch.go).
func (t *tx) write(i int, key []byte, value ...[]byte) {
	if t.err != nil {
		return
	}
	if t.readOnly {
		t.fail(errReadOnly)
		return
	}
	if t.batching {
		t.buffer(i == stmtDelete, key, value...)
		return
	}
	args := []any{key}
	if len(value) > 0 {
		args = append(args, value[0])
	}
	if err := t.c.exec(i, args...); err != nil {
		t.fail(err)
		return
	}
	if t.lw != nil {
		var v []byte
		if len(value) > 0 {
			v = value[0]
		}
		t.lite.set(t.lw, key, v, i != stmtDelete)
	}
}

// Scan implements kv.Tx. It pages through the range [lo, hi) where lo is
// prefix+after+0x00 (the least key after prefix+after) or prefix itself,
// and hi is the least key greater than every key with the prefix.
func (t *tx) Scan(prefix, after []byte, limit int, fn func(key, value []byte) bool) error {
	if t.err != nil || t.flush() != nil {
		return t.err
	}
	lo := make([]byte, 0, len(prefix)+len(after)+1) // never nil: nil binds as NULL
	lo = append(append(lo, prefix...), after...)
	if len(after) > 0 {
		lo = append(lo, 0)
	}
	hi := kv.PrefixEnd(prefix)
	left := limit
	if limit <= 0 {
		left = math.MaxInt
	}
	for left > 0 {
		page, err := t.scanPage(lo, hi, min(left, scanPage))
		if err != nil {
			return t.fail(err)
		}
		for _, p := range page {
			if !fn(p.k, p.v) {
				return nil
			}
		}
		if len(page) < min(left, scanPage) {
			return nil
		}
		left -= len(page)
		lo = append(append(lo[:0:0], page[len(page)-1].k...), 0)
	}
	return nil
}

// row is one scanned pair.
type row struct{ k, v []byte }

// scanPage reads up to n rows from lo (inclusive) to hi (exclusive, nil:
// unbounded), in key order.
func (t *tx) scanPage(lo, hi []byte, n int) ([]row, error) {
	i, args := stmtScan, []any{lo, hi, int64(n)}
	if hi == nil {
		i, args = stmtScanOpen, []any{lo, int64(n)}
	}
	page := make([]row, 0, n) // n <= scanPage
	if lt, ok := t.c.(*liteTx); ok {
		err := lt.scan(hi == nil, args, func(k, v []byte) { page = append(page, row{k: k, v: v}) })
		return page, err
	}
	err := t.c.query(i, args, func(cols [][]byte) error {
		r := row{k: cols[0], v: cols[1]}
		if r.v == nil {
			r.v = []byte{}
		}
		page = append(page, r)
		return nil
	})
	return page, err
}
