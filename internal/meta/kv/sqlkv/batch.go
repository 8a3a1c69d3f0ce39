package sqlkv

import (
	"bytes"
	"sort"
)

// Write batching. Over a network every statement costs a round trip, and
// an engine operation typically reads first and writes last (several
// keys). So where the dialect offers batch statements, Set and Delete only
// record the write; flush sends all recorded writes as one upsert and one
// delete, in key order (so concurrent transactions lock rows in the same
// order), before the next read and before commit. Reads therefore still
// see the transaction's own writes through the database, and the buffer
// needs no merging with query results.

// pendingWrite is a buffered Set (value) or Delete (deleted).
type pendingWrite struct {
	value   []byte
	deleted bool
}

// buffer records a write; a later write of the same key replaces it.
func (t *tx) buffer(deleted bool, key []byte, value ...[]byte) {
	if t.pending == nil {
		t.pending = map[string]pendingWrite{}
	}
	w := pendingWrite{deleted: deleted}
	if !deleted {
		w.value = append([]byte{}, value[0]...)
	}
	t.pending[string(key)] = w
}

// flush queues the guard of guessed reads (guess.go), if any, and the
// buffered writes, to be sent with the next read or with COMMIT. Its
// error is kept in t.err.
func (t *tx) flush() error {
	if err := t.queueGuard(); err != nil {
		return t.fail(err)
	}
	if len(t.pending) == 0 {
		return nil
	}
	if t.guesses != nil {
		if t.written == nil {
			t.written = map[string]pendingWrite{}
		}
		for k, w := range t.pending {
			t.written[k] = w
		}
	}
	var setKeys, setValues, delKeys [][]byte
	for k, w := range t.pending {
		if w.deleted {
			delKeys = append(delKeys, []byte(k))
		} else {
			setKeys, setValues = append(setKeys, []byte(k)), append(setValues, w.value)
		}
	}
	t.pending = nil
	sortPairs(setKeys, setValues)
	sortPairs(delKeys, nil)
	if len(setKeys) > 0 {
		if err := t.c.exec(stmtSetMany, setKeys, setValues); err != nil {
			return t.fail(err)
		}
	}
	if len(delKeys) > 0 {
		if err := t.c.exec(stmtDeleteMany, delKeys); err != nil {
			return t.fail(err)
		}
	}
	return nil
}

// sortPairs sorts keys bytewise, moving values (if any) along.
func sortPairs(keys, values [][]byte) {
	sort.Sort(byKey{keys, values})
}

type byKey struct{ keys, values [][]byte }

func (b byKey) Len() int           { return len(b.keys) }
func (b byKey) Less(i, j int) bool { return bytes.Compare(b.keys[i], b.keys[j]) < 0 }
func (b byKey) Swap(i, j int) {
	b.keys[i], b.keys[j] = b.keys[j], b.keys[i]
	if b.values != nil {
		b.values[i], b.values[j] = b.values[j], b.values[i]
	}
}
