package sqlkv

import (
	"bytes"

	"shoal/internal/meta/kv"
)

// getManyBatch is how many keys one GetMany query asks for. PostgreSQL
// passes them as one array; SQLite's statement has getManyBatch
// placeholders, and a shorter request repeats its last key to fill them.
const getManyBatch = 64

// getManyFew is how many keys SQLite reads one by one rather than in one
// query: an operation's handful (a parent and an entry, say).
const getManyFew = 4

var _ kv.MultiGetter = (*tx)(nil)

// GetMany implements kv.MultiGetter: one query per getManyBatch keys
// instead of one per key (a readdir page's attributes, say).
func (t *tx) GetMany(keys [][]byte) ([][]byte, error) {
	if t.err != nil {
		return nil, t.err
	}
	if t.guessing() {
		if vals, ok := t.guessAll(keys); ok {
			return vals, nil
		}
	}
	out := make([][]byte, len(keys))
	if !t.batching && len(keys) <= getManyFew {
		// No network: a few point reads cost less than one IN query.
		for i, k := range keys {
			v, err := t.Get(k)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	for start := 0; start < len(keys); start += getManyBatch {
		if err := t.getBatch(keys[start:min(len(keys), start+getManyBatch)], out[start:]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// getBatch fills out[i] with the value of keys[i] (nil where absent).
func (t *tx) getBatch(keys [][]byte, out [][]byte) error {
	if t.err != nil || t.flush() != nil {
		return t.err
	}
	var args []any
	if t.batching { // the dialect's array query (batchQueries)
		args = []any{keys}
	} else {
		args = make([]any, getManyBatch)
		for i := range args {
			args[i] = keys[min(i, len(keys)-1)]
		}
	}
	err := t.c.query(stmtGetMany, args, func(cols [][]byte) error {
		k, v := cols[0], cols[1]
		if v == nil {
			v = []byte{}
		}
		for i, want := range keys {
			if out[i] == nil && bytes.Equal(k, want) {
				out[i] = v
			}
		}
		return nil
	})
	if err != nil {
		return t.fail(err)
	}
	for i, k := range keys {
		t.seen(k, out[i])
	}
	return nil
}
