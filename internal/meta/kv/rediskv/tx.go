package rediskv

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"

	"github.com/redis/go-redis/v9"

	"shoal/internal/meta/kv"
)

// tx is a kv.Tx over one WATCHing Redis connection. Reads go to Redis
// after a WATCH of every key they depend on; writes are buffered here and
// applied by commit. The first error is kept in err and returned by every
// later call and by the txn helper.
type tx struct {
	s        *Store
	ctx      context.Context
	rtx      *redis.Tx
	readOnly bool
	writes   map[string]*write // pending writes by key
	watched  map[string]bool   // Redis keys WATCHed so far
	watching bool              // WATCHes are active on the connection
	rounds   int               // read round trips so far
	first    *firstRead        // the unWATCHed first Get, until validated
	token    string            // an Exclusive's freeze token ("": not one)
	err      error
}

// firstRead is a transaction's first Get, sent without a WATCH: a
// transaction whose only read it is needs no validation at all (a View of
// one key costs one round trip). If more reads follow, the next round trip
// WATCHes the key and re-reads it (pipe); if it commits writes first, the
// commit script compares it (commit). Either way a changed value is a
// conflict.
type firstRead struct {
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

// Get implements kv.Tx: the buffered write if any, else a WATCH and GET
// in one round trip.
func (t *tx) Get(key []byte) ([]byte, error) {
	if t.err != nil {
		return nil, t.err
	}
	if w, ok := t.writes[string(key)]; ok {
		if w.deleted {
			return nil, nil
		}
		return append([]byte{}, w.value...), nil
	}
	rkey := t.s.keys.value(key)
	unwatched := t.rounds == 0 && t.token == ""
	var get *redis.StringCmd
	err := t.pipe(func(p redis.Pipeliner) {
		if !unwatched {
			t.watchIn(p, rkey)
		}
		get = p.Get(t.ctx, rkey)
	})
	if err != nil {
		return nil, t.fail(err)
	}
	v, present, err := valueOf(get)
	if err != nil {
		return nil, t.fail(err)
	}
	if unwatched {
		t.first = &firstRead{rkey: rkey, fp: fingerprint(v, present)}
	}
	return v, nil
}

// valueOf reads a GET reply: nil if absent, non-nil if present.
func valueOf(get *redis.StringCmd) ([]byte, bool, error) {
	v, err := get.Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if v == nil {
		v = []byte{}
	}
	return v, true, nil
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

// pipe sends the commands fn queues in one round trip on the WATCHing
// connection, preceded by the validation of an unWATCHed first read.
// Replies that are errors (redis.Nil included) are left in their
// commands; only a transport error, or kv.ErrConflict if the first read
// went stale, is returned.
func (t *tx) pipe(fn func(p redis.Pipeliner)) error {
	first := t.first
	var recheck *redis.StringCmd
	cmds, err := t.rtx.Pipelined(t.ctx, func(p redis.Pipeliner) error {
		if first != nil {
			t.watchIn(p, first.rkey)
			recheck = p.Get(t.ctx, first.rkey)
		}
		fn(p)
		return nil
	})
	t.rounds++
	if err != nil && !errors.Is(err, redis.Nil) {
		for _, c := range cmds {
			if c.Err() != nil && !errors.Is(c.Err(), redis.Nil) {
				return c.Err()
			}
		}
		return err
	}
	if first != nil {
		t.first = nil
		v, present, err := valueOf(recheck)
		if err != nil {
			return err
		}
		if fingerprint(v, present) != first.fp {
			return kv.ErrConflict
		}
	}
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
