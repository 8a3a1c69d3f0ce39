package rediskv

import (
	"bytes"
	"errors"
	"sort"

	"github.com/redis/go-redis/v9"

	"shoal/internal/meta/kv"
)

// scanPage is how many keys one round of an unlimited Scan reads from
// Redis; a Scan with a limit reads up to maxScanPage keys a round (a
// readdir page of 1000 entries in one round, not four).
const (
	scanPage    = 256
	maxScanPage = 1024
)

// scanRange is the key range of one Scan: keys with prefix that sort
// after lo, or from lo itself when loIncl (after was empty).
type scanRange struct {
	prefix, lo []byte
	loIncl     bool
}

func newScanRange(prefix, after []byte) scanRange {
	lo := append(append([]byte{}, prefix...), after...)
	return scanRange{prefix: prefix, lo: lo, loIncl: len(after) == 0}
}

func (r scanRange) contains(key []byte) bool {
	if !bytes.HasPrefix(key, r.prefix) {
		return false
	}
	c := bytes.Compare(key, r.lo)
	return c > 0 || (c == 0 && r.loIncl)
}

// pair is one key and value read from Redis.
type pair struct{ k, v []byte }

// source yields the keys Redis holds in a range, in key order. next
// returns up to n keys; done reports the range exhausted.
type source interface {
	next(n int) (keys [][]byte, done bool, err error)
}

// Scan implements kv.Tx: it merges the keys Redis holds in the range (read
// in pages, each protected by WATCHes) with this transaction's buffered
// writes, in key order.
func (t *tx) Scan(prefix, after []byte, limit int, fn func(key, value []byte) bool) error {
	if t.err != nil {
		return t.err
	}
	r := newScanRange(prefix, after)
	m := merger{t: t, buf: t.bufferedIn(r)}
	if page, rest, ok := t.fromAhead(prefix, after); ok {
		// Read ahead (PrefetchScan): the page, then the range past it.
		m.page, m.srcDone = page, rest == nil
		if rest != nil {
			m.src = t.newSource(*rest)
		}
	} else if page, ok, err := t.snapScan(r, limit); err != nil {
		return t.fail(err)
	} else if ok {
		m.page, m.srcDone = page, true // the whole Scan, by one script (snap.go)
	} else {
		m.src = t.newSource(r)
	}
	for n := 0; limit <= 0 || n < limit; n++ {
		want := scanPage
		if limit > 0 {
			want = min(maxScanPage, limit-n)
		}
		k, v, ok, err := m.next(want)
		if err != nil {
			return t.fail(err)
		}
		if !ok || !fn(k, v) {
			return nil
		}
	}
	return nil
}

// bufferedIn returns the buffered writes in r, sorted by key.
func (t *tx) bufferedIn(r scanRange) []bufWrite {
	var out []bufWrite
	for k, w := range t.writes {
		if r.contains([]byte(k)) {
			out = append(out, bufWrite{[]byte(k), w})
		}
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].k, out[j].k) < 0 })
	return out
}

type bufWrite struct {
	k []byte
	w *write
}

// merger interleaves a source's pairs with buffered writes: a buffered
// write replaces (or, deleted, hides) the stored key it equals.
type merger struct {
	t       *tx
	buf     []bufWrite
	src     source
	page    []pair
	srcDone bool
}

// next returns the next visible pair, reading a page of up to want keys
// when the current one is used up.
func (m *merger) next(want int) ([]byte, []byte, bool, error) {
	for {
		for len(m.page) == 0 && !m.srcDone {
			if err := m.fill(want); err != nil {
				return nil, nil, false, err
			}
		}
		haveS, haveB := len(m.page) > 0, len(m.buf) > 0
		if !haveS && !haveB {
			return nil, nil, false, nil
		}
		if haveB && (!haveS || bytes.Compare(m.buf[0].k, m.page[0].k) <= 0) {
			b := m.buf[0]
			m.buf = m.buf[1:]
			if haveS && bytes.Equal(b.k, m.page[0].k) {
				m.page = m.page[1:]
			}
			if b.w.deleted {
				continue
			}
			return b.k, append([]byte{}, b.w.value...), true, nil
		}
		p := m.page[0]
		m.page = m.page[1:]
		return p.k, p.v, true, nil
	}
}

// fill reads the next page of keys and their values.
func (m *merger) fill(want int) error {
	keys, done, err := m.src.next(want)
	if err != nil {
		return err
	}
	m.srcDone = done
	m.page, err = m.t.values(keys)
	return err
}

// values WATCHes and reads the values of keys. A key gone meanwhile is
// skipped: its index set changed, so EXEC will fail and fn run again.
func (t *tx) values(keys [][]byte) ([]pair, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	rkeys := make([]string, len(keys))
	for i, k := range keys {
		rkeys[i] = t.s.keys.value(k)
	}
	var mget *redis.SliceCmd
	if err := t.watchChecks(func(p redis.Pipeliner) {
		t.watchIn(p, rkeys...)
		mget = p.MGet(t.ctx, rkeys...)
	}); err != nil {
		return nil, err
	}
	vals, err := mget.Result()
	if err != nil {
		return nil, err
	}
	out := make([]pair, 0, len(keys))
	for i, v := range vals {
		if s, ok := v.(string); ok {
			out = append(out, pair{keys[i], []byte(s)})
		}
	}
	t.s.track.drop(rkeys)
	return out, nil
}

// zrange WATCHes a sorted set and reads up to n members in [min, max]
// (ZRANGEBYLEX syntax).
func (t *tx) zrange(key, min, max string, n int) ([]string, error) {
	var cmd *redis.StringSliceCmd
	err := t.watchChecks(func(p redis.Pipeliner) {
		t.watchIn(p, key)
		cmd = p.ZRangeByLex(t.ctx, key, &redis.ZRangeBy{Min: min, Max: max, Count: int64(n)})
	})
	if err != nil {
		return nil, err
	}
	members, err := cmd.Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return members, err
}

// newSource picks the one-set source for prefixes of at least
// kv.ScanPrefixLen bytes and the walking source for shorter ones.
func (t *tx) newSource(r scanRange) source {
	if len(r.prefix) >= kv.ScanPrefixLen {
		p9 := r.prefix[:kv.ScanPrefixLen]
		return &zsetSource{t: t, prefix9: p9, min: lexFrom(r.lo[kv.ScanPrefixLen:], r.loIncl), max: lexBelow(r.prefix[kv.ScanPrefixLen:])}
	}
	return newShortSource(t, r)
}

// lexFrom is a ZRANGEBYLEX lower bound: from s, inclusive or not.
func lexFrom(s []byte, incl bool) string {
	if incl {
		if len(s) == 0 {
			return "-"
		}
		return "[" + string(s)
	}
	return "(" + string(s)
}

// lexBelow is the ZRANGEBYLEX upper bound of members starting with s.
func lexBelow(s []byte) string {
	end := kv.PrefixEnd(s)
	if end == nil {
		return "+"
	}
	return "(" + string(end)
}

// zsetSource yields the keys of one "z" set (one 9-byte prefix) in
// [min, max].
type zsetSource struct {
	t        *tx
	prefix9  []byte
	min, max string
}

func (z *zsetSource) next(n int) ([][]byte, bool, error) {
	members, err := z.t.zrange(z.t.s.keys.zset(z.prefix9), z.min, z.max, n)
	if err != nil || len(members) == 0 {
		return nil, true, err
	}
	keys := make([][]byte, len(members))
	for i, m := range members {
		keys[i] = append(append(make([]byte, 0, len(z.prefix9)+len(m)), z.prefix9...), m...)
	}
	z.min = "(" + members[len(members)-1]
	return keys, len(members) < n, nil
}
