package kvtest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"shoal/internal/meta/kv"
)

// testViewSnapshot starts a View, lets a writer change two keys after the
// View's first read, and checks the View's last run saw both keys from one
// state: either both old (a snapshot, or a store that held the writer off)
// or both new (a store that re-ran fn after validating its reads).
func testViewSnapshot(t *testing.T, s kv.Store) {
	a, b := key('V', 1, "a"), key('V', 1, "b")
	set(t, s, a, u64(1), b, u64(1))
	ctx := ctxFor(t)
	var writer chan error
	writerDone := false
	var seenA, seenB uint64
	err := s.View(ctx, func(tx kv.Tx) error {
		va, err := readU64(tx, a)
		if err != nil {
			return err
		}
		if writer == nil {
			writer = make(chan error, 1)
			go func() {
				writer <- s.Txn(ctx, func(tx kv.Tx) error {
					tx.Set(a, u64(2))
					tx.Set(b, u64(2))
					return nil
				})
			}()
			select {
			case err := <-writer:
				writerDone = true
				if err != nil {
					t.Errorf("writer during View: %v", err)
				}
			case <-time.After(300 * time.Millisecond):
				// The store holds writers off during a View: fine.
			}
		}
		vb, err := readU64(tx, b)
		seenA, seenB = va, vb
		return err
	})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	if !writerDone {
		if err := <-writer; err != nil {
			t.Errorf("writer after View: %v", err)
		}
	}
	if seenA != seenB {
		t.Fatalf("View saw a=%d b=%d: not one consistent state", seenA, seenB)
	}
	wantValue(t, s, b, u64(2))
}

func testLargeValues(t *testing.T, s kv.Store) {
	rng := rand.New(rand.NewPCG(1, 2))
	p := prefix('L', 3)
	var want []pair
	for i := 0; i < 6; i++ {
		v := make([]byte, 64<<10)
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		k := key('L', 3, fmt.Sprint(i))
		set(t, s, k, v)
		want = append(want, pair{string(k), string(v)})
	}
	for _, w := range want {
		if got := get(t, s, []byte(w.k)); !bytes.Equal(got, []byte(w.v)) {
			t.Fatalf("64 KiB value of %x read back wrong (%d bytes)", w.k, len(got))
		}
	}
	got := scan(t, s, p, nil, 0)
	if !equalPairs(got, want) {
		t.Fatalf("scan of 64 KiB values returned %d pairs, contents differ", len(got))
	}
}

func testManyKeysPaged(t *testing.T, s kv.Store) {
	const n, batch = 10000, 1000
	p := prefix('P', 77)
	name := func(i int) []byte { return key('P', 77, fmt.Sprintf("%06d", i)) }
	for start := 0; start < n; start += batch {
		err := s.Txn(ctxFor(t), func(tx kv.Tx) error {
			for i := start; i < start+batch; i++ {
				tx.Set(name(i), []byte(fmt.Sprint(i)))
			}
			return nil
		})
		if err != nil {
			t.Fatalf("bulk insert at %d: %v", start, err)
		}
	}
	for _, page := range []int{100, 333} {
		seen := pagedScan(t, s, p, page)
		if len(seen) != n {
			t.Fatalf("paged scan (page %d) saw %d keys, want %d", page, len(seen), n)
		}
		for i, k := range seen {
			if !bytes.Equal(k, name(i)) {
				t.Fatalf("paged scan (page %d) key %d = %x, want %x", page, i, k, name(i))
			}
		}
	}
	err := s.Txn(ctxFor(t), func(tx kv.Tx) error {
		for i := 0; i < n; i += 3 {
			tx.Delete(name(i))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("bulk delete: %v", err)
	}
	if got := len(scan(t, s, p, nil, 0)); got != n-(n+2)/3 {
		t.Fatalf("after deleting every third key, scan saw %d keys, want %d", got, n-(n+2)/3)
	}
}

// pagedScan reads all keys under p in pages of limit, as readdir does.
func pagedScan(t *testing.T, s kv.Store, p []byte, limit int) [][]byte {
	t.Helper()
	var seen [][]byte
	var after []byte
	for {
		page := scan(t, s, p, after, limit)
		for _, kvp := range page {
			seen = append(seen, []byte(kvp.k))
		}
		if len(page) < limit {
			return seen
		}
		after = []byte(page[len(page)-1].k[len(p):])
	}
}
