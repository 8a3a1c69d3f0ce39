package rediskv

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"testing"

	"shoal/internal/meta/kv"
)

// TestShortPrefixScansOrdered checks that scans of prefixes shorter than
// kv.ScanPrefixLen come back complete and in key order, in one go and in
// pages, across many 9-byte keys (one "z" set each), a "z" set larger than
// a page, and short keys.
func TestShortPrefixScansOrdered(t *testing.T) {
	s := openRedis(t)
	defer s.Close()
	ctx := context.Background()
	var all [][]byte
	for i := 0; i < 300; i++ {
		all = append(all, binary.BigEndian.AppendUint64([]byte{'L'}, uint64(i*7)))
	}
	big := binary.BigEndian.AppendUint64([]byte{'M'}, 5)
	for i := 0; i < 600; i++ {
		all = append(all, append(append([]byte{}, big...), fmt.Sprintf("%04d", i)...))
	}
	all = append(all, []byte("K"), []byte("Lab"), []byte("M\xff"), []byte("N")) // none equals a paged prefix
	err := s.Txn(ctx, func(tx kv.Tx) error {
		for _, k := range all {
			tx.Set(k, k)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(all, func(i, j int) bool { return bytes.Compare(all[i], all[j]) < 0 })
	for _, prefix := range []string{"", "L", "M", "M\x00", "Z"} {
		var want [][]byte
		for _, k := range all {
			if bytes.HasPrefix(k, []byte(prefix)) {
				want = append(want, k)
			}
		}
		for _, limit := range []int{0, 1, 100, 257} {
			got := pagedKeys(t, s, []byte(prefix), limit)
			if len(got) != len(want) {
				t.Fatalf("prefix %q limit %d: %d keys, want %d", prefix, limit, len(got), len(want))
			}
			for i := range got {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("prefix %q limit %d: key %d = %q, want %q", prefix, limit, i, got[i], want[i])
				}
			}
		}
	}
}

// pagedKeys scans prefix in pages of limit (0: one scan), checking values.
func pagedKeys(t *testing.T, s kv.Store, prefix []byte, limit int) [][]byte {
	var out [][]byte
	var after []byte
	for {
		n := 0
		err := s.View(context.Background(), func(tx kv.Tx) error {
			n = 0
			return tx.Scan(prefix, after, limit, func(k, v []byte) bool {
				if !bytes.Equal(k, v) {
					t.Errorf("key %q has value %q", k, v)
				}
				out = append(out, k)
				after = k[len(prefix):]
				n++
				return true
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		if limit <= 0 || n < limit {
			return out
		}
	}
}
