package rediskv

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

// tx is a kv.Tx over one dedicated Redis connection. Point reads go out
// unWATCHed and are checked by value (checks); Scans WATCH what they read;
// writes are buffered here and applied by commit. The first error is kept
// in err and returned by every later call and by the txn helper.
type tx struct {
	s        *Store
	ctx      context.Context
	rtx      *redis.Tx
	readOnly bool
	writes   map[string]*write // pending writes by key
	watched  map[string]bool   // Redis keys WATCHed so far
	watching bool              // WATCHes are active on the connection
	checks   []check           // point reads not WATCHed, to check by value
	read1    map[string][]byte // values read by key (nil: absent), for re-reads
	token    string            // an Exclusive's freeze token ("": not one)
	ahead    *aheadPage        // the page PrefetchScan read, if any
	seedable bool              // the first read round may take seeds (seeds.go)
	seeded   []string          // Redis keys whose values came from seeds
	guessing bool              // a round of keys guessed absent need not be read (seeds.go)
	cached   *meta.Cached      // a View's first round may come from the client-side cache
	snapOK   bool              // a short Scan may be read whole by script (snap.go)
	snapped  bool              // one was: any further read from Redis is a conflict
	fresh    []string          // Redis prefixes no key is under before commit (fresh.go)
	err      error
}

// maxChecks bounds the point reads a transaction checks by value, each
// read round re-reading them all; past it the next round WATCHes them.
const maxChecks = 32

// check is a point read sent without a WATCH: the Redis key and the
// fingerprint of the value fn was given. Every later read round re-reads
// the checks in the same MGET (one command: one instant), and the commit
// script compares them before writing; a changed value is a conflict.
type check struct {
	rkey string
	fp   string // fingerprint of the value read
}

// fingerprint names a value for comparison: "-" if absent, else its SHA-1
// in hex (what the commit script computes with redis.sha1hex).
func fingerprint(v []byte, present bool) string {
	if !present {
		return "-"
	}
	sum := sha1.Sum(v)
	return hex.EncodeToString(sum[:])
}

// write is one buffered Set (value) or Delete (deleted).
type write struct {
	value   []byte
	deleted bool
}

var _ kv.Tx = (*tx)(nil)

// fail keeps the first error.
func (t *tx) fail(err error) error {
	if t.err == nil {
		t.err = err
	}
	return t.err
}

// Get implements kv.Tx: the buffered write if any, else a point read.
func (t *tx) Get(key []byte) ([]byte, error) {
	vals, err := t.GetMany([][]byte{key})
	if err != nil {
		return nil, err
	}
	return vals[0], nil
}

var _ kv.MultiGetter = (*tx)(nil)

// GetMany implements kv.MultiGetter: the buffered writes, and the other
// keys in one round trip (read).
func (t *tx) GetMany(keys [][]byte) ([][]byte, error) {
	if t.err != nil {
		return nil, t.err
	}
	out := make([][]byte, len(keys))
	var rkeys []string
	var at [][]int // out's indexes of each rkey
	index := map[string]int{}
	for i, k := range keys {
		if w, ok := t.writes[string(k)]; ok {
			if !w.deleted {
				out[i] = append([]byte{}, w.value...)
			}
			continue
		}
		rk := t.s.keys.value(k)
		if v, ok := t.read1[rk]; ok {
			if v != nil {
				out[i] = append([]byte{}, v...)
			}
			continue
		}
		if j, ok := index[rk]; ok {
			at[j] = append(at[j], i)
			continue
		}
		index[rk] = len(rkeys)
		rkeys = append(rkeys, rk)
		at = append(at, []int{i})
	}
	if len(rkeys) == 0 {
		return out, nil
	}
	vals, ok := t.seed(rkeys)
	if !ok {
		vals, ok = t.guess(rkeys)
	}
	if !ok {
		var err error
		if vals, err = t.read(rkeys); err != nil {
			return nil, t.fail(err)
		}
	}
	if t.read1 == nil {
		t.read1 = map[string][]byte{}
	}
	for j, v := range vals {
		for _, i := range at[j] {
			if v != nil {
				out[i] = append([]byte{}, v...)
			}
		}
		var kept []byte // nil: absent
		if v != nil {
			kept = append([]byte{}, v...)
		}
		t.read1[rkeys[j]] = kept
	}
	return out, nil
}

var _ kv.Prefetcher = (*tx)(nil)

// Prefetch implements kv.Prefetcher: GetMany, whose values later Gets
// take from read1 (a key read once in a transaction is read from Redis
// once: its value cannot change without failing the transaction).
func (t *tx) Prefetch(keys ...[]byte) error {
	_, err := t.GetMany(keys)
	return err
}

// read reads the values of rkeys (nil where absent) in one round trip.
//
// Until the transaction WATCHes anything, the round is one MGET of the
// checks and rkeys: one command, so one instant of the database. If every
// check still has its value, all that fn was given is the state at that
// instant, and rkeys become checks too. Once WATCHing (a Scan came first),
// or past maxChecks, the round WATCHes the checks and rkeys before the
// MGET: a check unchanged then stays so until EXEC, or EXEC refuses. An
// Exclusive reads without either (its freeze holds the state still).
//
// Except for the first round of a View's first attempt: past maxChecks it
// is a plain MGET, and the attempt is then snapped (snap.go: any later
// round from Redis ends it as a conflict, and the next attempt takes the
// WATCHed path). Redis checks each new WATCH against every key the
// connection already WATCHes, so WATCHing n keys costs it O(n²): 7 ms
// of Redis, serving no one else, for the 1024 orphan marks a mount's
// flush reads at a time (kvmeta's linger.go), measured on the 2-core test
// machine; a View that reads once needs no WATCH at all.
func (t *tx) read(rkeys []string) ([][]byte, error) {
	if err := t.afterSnap(); err != nil {
		return nil, err
	}
	if t.token != "" {
		var mget *redis.SliceCmd
		if err := t.pipe(func(p redis.Pipeliner) { mget = p.MGet(t.ctx, rkeys...) }); err != nil {
			return nil, err
		}
		vals, _, err := mgetValues(mget, len(rkeys))
		t.s.track.drop(rkeys)
		return vals, err
	}
	checked := len(t.checks)
	all := make([]string, 0, checked+len(rkeys))
	for _, c := range t.checks {
		all = append(all, c.rkey)
	}
	all = append(all, rkeys...)
	watch := t.watching || len(all) > maxChecks || t.pendingAhead()
	if watch && t.snapOK && t.readOnly && !t.watching && t.ahead == nil && checked == 0 && len(t.read1) == 0 {
		watch, t.snapped = false, true // one MGET is one instant (see above)
	}
	g := t.s.track.guard(all)
	var mget *redis.SliceCmd
	var ahead func() error
	if err := t.pipe(func(p redis.Pipeliner) {
		if watch {
			ahead = t.rewatchAhead(p)
			t.watchIn(p, all...)
		}
		mget = p.MGet(t.ctx, all...)
	}); err != nil {
		return nil, err
	}
	if ahead != nil {
		if err := ahead(); err != nil {
			return nil, err
		}
	}
	vals, present, err := mgetValues(mget, len(all))
	if err != nil {
		return nil, err
	}
	t.s.seeds.put(all, vals, present)
	t.s.track.fill(all, vals, present, g)
	for i, c := range t.checks {
		if fingerprint(vals[i], present[i]) != c.fp {
			return nil, kv.ErrConflict
		}
	}
	if watch || t.snapped {
		t.checks = nil
	} else {
		for i, rk := range rkeys {
			t.checks = append(t.checks, check{rkey: rk, fp: fingerprint(vals[checked+i], present[checked+i])})
		}
	}
	return vals[checked:], nil
}

// mgetValues reads an MGET reply of n keys: nil where absent, non-nil
// where present.
func mgetValues(mget *redis.SliceCmd, n int) ([][]byte, []bool, error) {
	res, err := mget.Result()
	if err != nil {
		return nil, nil, err
	}
	if len(res) != n {
		return nil, nil, fmt.Errorf("MGET of %d keys answered %d values", n, len(res))
	}
	vals, present := make([][]byte, n), make([]bool, n)
	for i, r := range res {
		if s, ok := r.(string); ok {
			vals[i], present[i] = append([]byte{}, s...), true
		}
	}
	return vals, present, nil
}

// Set implements kv.Tx.
func (t *tx) Set(key, value []byte) {
	if t.checkWrite(key) {
		t.buffer(key, &write{value: append([]byte{}, value...)})
	}
}

// Delete implements kv.Tx.
func (t *tx) Delete(key []byte) {
	if t.checkWrite(key) {
		t.buffer(key, &write{deleted: true})
	}
}

func (t *tx) checkWrite(key []byte) bool {
	switch {
	case t.err != nil:
		return false
	case t.readOnly:
		t.fail(errReadOnly)
		return false
	case len(key) == 0:
		t.fail(errEmptyKey)
		return false
	}
	return true
}

func (t *tx) buffer(key []byte, w *write) {
	if t.writes == nil {
		t.writes = map[string]*write{}
	}
	t.writes[string(key)] = w
}

// pipe sends the commands fn queues in one round trip on the
// connection. Replies that are errors (redis.Nil included) are left in
// their commands; only a transport error is returned.
func (t *tx) pipe(fn func(p redis.Pipeliner)) error {
	cmds, err := t.rtx.Pipelined(t.ctx, func(p redis.Pipeliner) error {
		fn(p)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		for _, c := range cmds {
			if c.Err() != nil && !errors.Is(c.Err(), redis.Nil) {
				return c.Err()
			}
		}
		return err
	}
	return nil
}

// watchChecks moves the checks under WATCH before a Scan's first round:
// WATCH them and re-read them, in the round trip of the Scan's first
// commands (queued by fn); a changed value is a conflict.
func (t *tx) watchChecks(fn func(p redis.Pipeliner)) error {
	if err := t.afterSnap(); err != nil {
		return err
	}
	if (len(t.checks) == 0 && !t.pendingAhead()) || t.token != "" {
		return t.pipe(fn)
	}
	rkeys := make([]string, len(t.checks))
	for i, c := range t.checks {
		rkeys[i] = c.rkey
	}
	var mget *redis.SliceCmd
	var ahead func() error
	err := t.pipe(func(p redis.Pipeliner) {
		ahead = t.rewatchAhead(p)
		if len(rkeys) > 0 {
			t.watchIn(p, rkeys...)
			mget = p.MGet(t.ctx, rkeys...)
		}
		fn(p)
	})
	if err != nil {
		return err
	}
	if ahead != nil {
		if err := ahead(); err != nil {
			return err
		}
	}
	if mget == nil {
		return nil
	}
	vals, present, err := mgetValues(mget, len(rkeys))
	if err != nil {
		return err
	}
	for i, c := range t.checks {
		if fingerprint(vals[i], present[i]) != c.fp {
			return kv.ErrConflict
		}
	}
	t.checks = nil
	return nil
}

// watchIn queues a WATCH of the keys not watched yet. A WATCH must come
// before the read it protects: EXEC then fails if the key changed at any
// time after the read.
//
// An Exclusive WATCHes nothing: while its freeze holds no other commit
// applies, and its commit checks the freeze instead.
func (t *tx) watchIn(p redis.Pipeliner, keys ...string) {
	if t.token != "" {
		return
	}
	args := []any{"WATCH"}
	for _, k := range keys {
		if !t.watched[k] {
			t.watched[k] = true
			args = append(args, k)
		}
	}
	if len(args) > 1 {
		p.Do(t.ctx, args...)
		t.watching = true
	}
}
