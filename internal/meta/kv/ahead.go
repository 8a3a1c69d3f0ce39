package kv

import (
	"bytes"
	"context"
	"errors"
	"slices"
)

// FollowReader is implemented by stores that read a few known keys, and
// the key one of them names (a Follow), more cheaply in one request than a
// View does one read at a time: PostgreSQL sends one SELECT alone, which
// the server runs in an implicit transaction of a View's kind (no BEGIN or
// COMMIT statement), in one round trip, where a View costs a round trip per
// dependent read plus one for COMMIT. It is optional: ViewAhead falls
// back to View.
type FollowReader interface {
	// ReadFollow returns, read in one transaction with View's isolation
	// and retry rules, the values of keys (nil where absent) and, for a
	// non-nil f, the value of f.From and the key f.From's value names with
	// its value (next nil when From is absent or too short; nextVal nil
	// when next is absent).
	ReadFollow(ctx context.Context, f *Follow, keys ...[]byte) (vals [][]byte, from, next, nextVal []byte, err error)
}

// errNotRead is what a Tx of ViewAhead answers for a read outside what
// it read ahead; ViewAhead then runs fn again in a View.
var errNotRead = errors.New("kv: read outside ViewAhead's keys")

// ViewAhead runs fn, which must only read, in one consistent snapshot,
// like View. Where s is a FollowReader it first reads keys and f (nil:
// none) in one ReadFollow and runs fn over a Tx that answers Gets of
// exactly what that read (the keys, f.From and the key it names): one
// request for an operation whose reads are known ahead (a lookup: the
// directory's attributes, the entry, the attributes it names). If fn
// reads anything else (another key, a Scan), that run's outcome is
// dropped and fn runs again in a View, from scratch. Either way fn may run
// more than once; only the last run counts.
func ViewAhead(ctx context.Context, s Store, f *Follow, keys [][]byte, fn func(tx Tx) error) error {
	r, ok := s.(FollowReader)
	if !ok {
		return s.View(ctx, fn)
	}
	vals, from, next, nextVal, err := r.ReadFollow(ctx, f, keys...)
	if err != nil {
		return err
	}
	t := &aheadTx{read: make(map[string][]byte, len(keys)+2)}
	for i, k := range keys {
		t.read[string(k)] = vals[i]
	}
	if f != nil {
		t.read[string(f.From)] = from
		if next != nil {
			t.read[string(next)] = nextVal
		}
	}
	err = fn(t)
	if t.missed {
		return s.View(ctx, fn)
	}
	return err
}

// aheadTx is ViewAhead's read-only Tx over the values read ahead: an
// entry with a nil value is a key read and found absent.
type aheadTx struct {
	read   map[string][]byte
	missed bool
}

func (t *aheadTx) Get(key []byte) ([]byte, error) {
	v, ok := t.read[string(key)]
	if !ok {
		t.missed = true
		return nil, errNotRead
	}
	if v == nil {
		return nil, nil
	}
	return append(make([]byte, 0, len(v)), v...), nil
}

// Set and Delete in a read-only Tx: the run is dropped and the View that
// reruns fn refuses them as any View does.
func (t *aheadTx) Set(_, _ []byte) { t.missed = true }
func (t *aheadTx) Delete(_ []byte) { t.missed = true }

func (t *aheadTx) Scan(_, _ []byte, _ int, _ func(key, value []byte) bool) error {
	t.missed = true
	return errNotRead
}

// Key returns the key from's value names: Prefix and from[Off:Off+Len];
// nil when from is absent or too short.
func (f *Follow) Key(from []byte) []byte {
	if from == nil || len(from) < f.Off+f.Len {
		return nil
	}
	return append(append(make([]byte, 0, len(f.Prefix)+f.Len), f.Prefix...), from[f.Off:f.Off+f.Len]...)
}

// FollowGetter is implemented by transactions that read keys and the key
// f.From's value names in one round trip (PostgreSQL: one statement, as
// FollowReader's but inside the transaction). It is optional:
// GetManyFollow falls back to GetMany and two Gets.
type FollowGetter interface {
	// GetManyFollow returns what FollowReader.ReadFollow does, read in
	// the transaction (so seeing its own writes).
	GetManyFollow(f *Follow, keys ...[]byte) (vals [][]byte, from, next, nextVal []byte, err error)
}

// GetManyFollow reads keys, f.From and the key f.From's value names
// through tx, in one round trip where tx can.
func GetManyFollow(tx Tx, f *Follow, keys ...[]byte) (vals [][]byte, from, next, nextVal []byte, err error) {
	if g, ok := tx.(FollowGetter); ok {
		return g.GetManyFollow(f, keys...)
	}
	return FollowEach(tx, f, keys...)
}

// FollowEach reads keys (GetMany), then f.From, then the key it names:
// GetManyFollow's fallback, for a FollowGetter with nothing better.
func FollowEach(tx Tx, f *Follow, keys ...[]byte) (vals [][]byte, from, next, nextVal []byte, err error) {
	if vals, err = GetMany(tx, keys); err != nil {
		return nil, nil, nil, nil, err
	}
	if i := slices.IndexFunc(keys, func(k []byte) bool { return bytes.Equal(k, f.From) }); i >= 0 {
		from = vals[i] // read already
	} else if from, err = tx.Get(f.From); err != nil {
		return nil, nil, nil, nil, err
	}
	if next = f.Key(from); next != nil {
		if nextVal, err = tx.Get(next); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	return vals, from, next, nextVal, nil
}
