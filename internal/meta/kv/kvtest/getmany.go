package kvtest

import (
	"bytes"
	"fmt"
	"testing"

	"shoal/internal/meta/kv"
)

// testGetMany checks kv.GetMany (the backend's MultiGetter, if any):
// order, absent keys, duplicates, empty values, more keys than one batch,
// and the transaction's own unflushed writes.
func testGetMany(t *testing.T, s kv.Store) {
	ctx := ctxFor(t)
	var keys [][]byte
	for i := 0; i < 150; i++ {
		keys = append(keys, key('M', uint64(i), fmt.Sprint("k", i)))
	}
	err := s.Txn(ctx, func(tx kv.Tx) error {
		for i, k := range keys {
			if i%3 == 0 {
				continue // absent
			}
			tx.Set(k, []byte(fmt.Sprint("v", i)))
		}
		tx.Set(keys[4], []byte{}) // present but empty
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := func(i int) []byte {
		switch {
		case i%3 == 0:
			return nil
		case i == 4:
			return []byte{}
		}
		return []byte(fmt.Sprint("v", i))
	}
	ask := append(append([][]byte{}, keys...), keys[7], keys[9]) // duplicates
	err = s.View(ctx, func(tx kv.Tx) error {
		got, err := kv.GetMany(tx, ask)
		if err != nil {
			return err
		}
		for i, k := range ask {
			idx := i
			if i >= len(keys) {
				idx = map[int]int{len(keys): 7, len(keys) + 1: 9}[i]
			}
			if w := want(idx); !bytes.Equal(got[i], w) || (w == nil) != (got[i] == nil) {
				t.Errorf("key %q: got %q, want %q", k, got[i], w)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Txn(ctx, func(tx kv.Tx) error {
		tx.Set(keys[0], []byte("fresh"))
		tx.Delete(keys[1])
		got, err := kv.GetMany(tx, keys[:2])
		if err != nil {
			return err
		}
		if string(got[0]) != "fresh" || got[1] != nil {
			t.Errorf("GetMany does not see the transaction's writes: %q", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
