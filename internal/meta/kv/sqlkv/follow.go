package sqlkv

import (
	"bytes"
	"context"
	"time"

	"shoal/internal/meta/kv"
)

var _ kv.FollowReader = (*Store)(nil)

// pgReadFollow reads an array of keys and, in the same statement (so in
// one snapshot), the key that one of them names: a Follow's Prefix and
// then the bytes [Off, Off+Len) of From's value, if it has that many.
// Its arguments: keys (including From), Prefix, Off+1 (SQL counts from
// one), Len, From, Off+Len. Each part reads shoal_kv by its primary key
// (index scans only: see pgSettings), so its SERIALIZABLE predicate
// locks are those of the keys it reads, as for a View that Gets them.
const pgReadFollow = "SELECT k, v FROM shoal_kv WHERE k = ANY(?::bytea[]) " +
	"UNION ALL SELECT k, v FROM shoal_kv WHERE k = " +
	"(SELECT ?::bytea || substring(v FROM ?::int FOR ?::int) FROM shoal_kv WHERE k = ? AND length(v) >= ?::int)"

// ReadFollow implements kv.FollowReader. On PostgreSQL it is one
// statement (pgReadFollow, or GetMany's array read without f) sent alone,
// outside BEGIN (pgPool.query): the server runs it in an implicit
// SERIALIZABLE READ ONLY transaction, the same transaction a View reading
// those keys runs, so the same isolation, in one round trip and without
// the BEGIN and COMMIT statements; the data counts only once that
// transaction committed without error, as PostgreSQL requires of
// serializable reads. SQLite reads the keys in a View, one by one: no
// network, nothing to save.
func (s *Store) ReadFollow(ctx context.Context, f *kv.Follow, keys ...[]byte) (vals [][]byte, from, next, nextVal []byte, err error) {
	if !s.batching {
		read := func() (followRead, error) {
			var r followRead
			err := s.View(ctx, func(ktx kv.Tx) error {
				var err error
				if r.vals, err = kv.GetMany(ktx, keys); err != nil || f == nil {
					return err
				}
				if r.from, err = ktx.Get(f.From); err != nil {
					return err
				}
				if r.next = f.Key(r.from); r.next != nil {
					r.nextVal, err = ktx.Get(r.next)
				}
				return err
			})
			return r, err
		}
		var r followRead
		if s.lite != nil {
			r, err = s.lite.readThrough(ctx, f, keys, read)
		} else {
			r, err = read()
		}
		return r.vals, r.from, r.next, r.nextVal, err
	}
	if s.closed.Load() {
		return nil, nil, nil, nil, errClosed
	}
	i, args := stmtGetMany, []any{keys}
	if f != nil {
		i, args = stmtReadFollow, readFollowArgs(f, keys)
	}
	var rows []row
	err = kv.Retry(ctx, "sqlkv: "+s.name, s.retryTimeout, func() (kv.Class, error) {
		rows = rows[:0]
		err := s.pool.query(ctx, i, args, func(cols [][]byte) error {
			rows = append(rows, row{k: cols[0], v: cols[1]})
			return nil
		})
		if err != nil {
			return s.dialect.classify(err), s.wrap("read", err)
		}
		return kv.Fatal, nil
	})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	vals, from, next, nextVal = followValues(rows, f, keys)
	if s.guesses != nil {
		s.guesses.note(followRead{vals, from, next, nextVal}.byKey(f, keys), nil, time.Time{})
	}
	return vals, from, next, nextVal, nil
}

// followValues picks from rows (k, v) read by stmtReadFollow (or
// stmtGetMany without f) the values of keys, f.From and the key it names.
func followValues(rows []row, f *kv.Follow, keys [][]byte) (vals [][]byte, from, next, nextVal []byte) {
	valueOf := func(k []byte) []byte {
		for _, r := range rows {
			if bytes.Equal(r.k, k) {
				if r.v == nil {
					return []byte{}
				}
				return r.v
			}
		}
		return nil
	}
	vals = make([][]byte, len(keys))
	for j, k := range keys {
		vals[j] = valueOf(k)
	}
	if f != nil {
		from = valueOf(f.From)
		if next = f.Key(from); next != nil {
			nextVal = valueOf(next)
		}
	}
	return vals, from, next, nextVal
}

var _ kv.FollowGetter = (*tx)(nil)

// GetManyFollow implements kv.FollowGetter: on PostgreSQL one statement,
// stmtReadFollow, in the transaction (after its buffered writes); SQLite
// reads the keys one by one (kv.FollowEach).
func (t *tx) GetManyFollow(f *kv.Follow, keys ...[]byte) (vals [][]byte, from, next, nextVal []byte, err error) {
	if !t.batching {
		return kv.FollowEach(t, f, keys...)
	}
	if t.err != nil {
		return nil, nil, nil, nil, t.err
	}
	if t.guessing() {
		if vals, from, next, nextVal, ok := t.guessFollow(f, keys); ok {
			return vals, from, next, nextVal, nil
		}
	}
	if t.flush() != nil {
		return nil, nil, nil, nil, t.err
	}
	var rows []row
	err = t.c.query(stmtReadFollow, readFollowArgs(f, keys), func(cols [][]byte) error {
		rows = append(rows, row{k: cols[0], v: cols[1]})
		return nil
	})
	if err != nil {
		return nil, nil, nil, nil, t.fail(err)
	}
	vals, from, next, nextVal = followValues(rows, f, keys)
	for i, k := range keys {
		t.seen(k, vals[i])
	}
	t.seen(f.From, from)
	if next != nil {
		t.seen(next, nextVal)
	}
	return vals, from, next, nextVal, nil
}

// guessFollow answers GetManyFollow from guesses, all or none.
func (t *tx) guessFollow(f *kv.Follow, keys [][]byte) (vals [][]byte, from, next, nextVal []byte, ok bool) {
	all, ok := t.guessAll(append(append(make([][]byte, 0, len(keys)+1), keys...), f.From))
	if !ok {
		return nil, nil, nil, nil, false
	}
	vals, from = all[:len(keys)], all[len(keys)]
	if next = f.Key(from); next != nil {
		if nextVal, ok = t.guess(next); !ok {
			return nil, nil, nil, nil, false
		}
	}
	return vals, from, next, nextVal, true
}

// readFollowArgs are stmtReadFollow's arguments (see pgReadFollow).
func readFollowArgs(f *kv.Follow, keys [][]byte) []any {
	all := append(append(make([][]byte, 0, len(keys)+1), keys...), f.From)
	return []any{all, f.Prefix, f.Off + 1, f.Len, f.From, f.Off + f.Len}
}
