package rediskv

import (
	"context"
	"testing"

	"shoal/internal/meta/kv"
)

// TestPrefetchedReadsOneState prefetches two keys, lets another client
// change the second, then reads it: the transaction must be given the
// prefetched value (the pair fn sees is one state, the prefetch's), and
// its commit must then fail on the changed check so that fn runs again and
// copies the current pair. Without a Prefetcher the Get would read the new
// value beside the old one.
func TestPrefetchedReadsOneState(t *testing.T) {
	for _, kind := range []string{"txn", "view"} {
		t.Run(kind, func(t *testing.T) {
			s := openRedis(t)
			defer s.Close()
			ctx := context.Background()
			a, b, c := []byte("pre-a"), []byte("pre-b"), []byte("pre-c")
			if err := s.Txn(ctx, func(tx kv.Tx) error { tx.Set(a, []byte("a1")); tx.Set(b, []byte("b1")); return nil }); err != nil {
				t.Fatal(err)
			}
			runs := 0
			var pairs []string
			fn := func(tx kv.Tx) error {
				runs++
				if err := kv.Prefetch(tx, a, b, a); err != nil {
					return err
				}
				if runs == 1 {
					if err := s.Txn(ctx, func(o kv.Tx) error { o.Set(b, []byte("b2")); return nil }); err != nil {
						t.Errorf("concurrent writer: %v", err)
					}
				}
				va, err := tx.Get(a)
				if err != nil {
					return err
				}
				vb, err := tx.Get(b)
				if err != nil {
					return err
				}
				pairs = append(pairs, string(va)+string(vb))
				if kind == "view" {
					// A further read round re-reads the checks.
					_, err = tx.Get(c)
					return err
				}
				tx.Set(c, append(va, vb...))
				return nil
			}
			var err error
			if kind == "view" {
				err = s.View(ctx, fn)
			} else {
				err = s.Txn(ctx, fn)
			}
			if err != nil {
				t.Fatal(err)
			}
			if runs != 2 || pairs[0] != "a1b1" || pairs[1] != "a1b2" {
				t.Fatalf("fn ran %d times seeing %q; want 2 runs seeing [a1b1 a1b2]", runs, pairs)
			}
			if kind == "txn" {
				var got []byte
				if err := s.View(ctx, func(tx kv.Tx) (err error) { got, err = tx.Get(c); return err }); err != nil || string(got) != "a1b2" {
					t.Fatalf("c = %q, %v; want a1b2", got, err)
				}
			}
		})
	}
}

// TestLaterReadChecked changes a key read in a transaction's second round
// (not its first): the commit script must refuse the write, and fn run
// again.
func TestLaterReadChecked(t *testing.T) {
	s := openRedis(t)
	defer s.Close()
	ctx := context.Background()
	a, b, c := []byte("later-a"), []byte("later-b"), []byte("later-c")
	runs := 0
	var sawB []byte
	err := s.Txn(ctx, func(tx kv.Tx) error {
		runs++
		if _, err := tx.Get(a); err != nil {
			return err
		}
		v, err := tx.Get(b)
		if err != nil {
			return err
		}
		sawB = v
		if runs == 1 {
			if err := s.Txn(ctx, func(o kv.Tx) error { o.Set(b, []byte("new")); return nil }); err != nil {
				t.Errorf("concurrent writer: %v", err)
			}
		}
		tx.Set(c, append([]byte("copy:"), v...))
		return nil
	})
	if err != nil || runs != 2 || string(sawB) != "new" {
		t.Fatalf("Txn = %v after %d runs seeing b=%q; want 2 runs seeing new", err, runs, sawB)
	}
}

// TestManyChecksThenScan reads more keys than maxChecks one by one (the
// checks move under WATCH) and then scans, with a concurrent change of an
// early key before the scan: fn must run again.
func TestManyChecksThenScan(t *testing.T) {
	s := openRedis(t)
	defer s.Close()
	ctx := context.Background()
	key := func(i int) []byte { return []byte{'m', 0, 0, 0, 0, 0, 0, 0, 1, byte(i)} }
	if err := s.Txn(ctx, func(tx kv.Tx) error {
		for i := range maxChecks + 5 {
			tx.Set(key(i), []byte{byte(i)})
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	runs, n := 0, 0
	err := s.Txn(ctx, func(tx kv.Tx) error {
		runs++
		for i := range maxChecks + 5 {
			if _, err := tx.Get(key(i)); err != nil {
				return err
			}
		}
		if runs == 1 {
			if err := s.Txn(ctx, func(o kv.Tx) error { o.Set(key(0), []byte("changed")); return nil }); err != nil {
				t.Errorf("concurrent writer: %v", err)
			}
		}
		n = 0
		err := tx.Scan(key(0)[:9], nil, 0, func(_, _ []byte) bool { n++; return true })
		tx.Set([]byte("many-done"), []byte{1})
		return err
	})
	if err != nil || runs != 2 || n != maxChecks+5 {
		t.Fatalf("Txn = %v after %d runs, scan saw %d keys; want 2 runs and %d keys", err, runs, n, maxChecks+5)
	}
}

// TestPrefetchFollow reads an entry and the key its value names in one
// round: the named key's value is the one of that instant even if another
// client changes it before fn reads it, and the commit then fails on it,
// so fn runs again. A From that is absent or too short names nothing.
func TestPrefetchFollow(t *testing.T) {
	s := openRedis(t)
	defer s.Close()
	ctx := context.Background()
	dir, from, named := []byte("fol-dir"), []byte("fol-from"), []byte("fol-A12345678")
	if err := s.Txn(ctx, func(tx kv.Tx) error {
		tx.Set(dir, []byte("d"))
		tx.Set(from, []byte("12345678rest"))
		tx.Set(named, []byte("v1"))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	f := kv.Follow{From: from, Prefix: []byte("fol-A"), Off: 0, Len: 8}
	runs := 0
	var seen []string
	err := s.Txn(ctx, func(tx kv.Tx) error {
		runs++
		if err := kv.PrefetchFollow(tx, f, dir); err != nil {
			return err
		}
		if runs == 1 {
			if err := s.Txn(ctx, func(o kv.Tx) error { o.Set(named, []byte("v2")); return nil }); err != nil {
				t.Errorf("concurrent writer: %v", err)
			}
		}
		v, err := tx.Get(named)
		seen = append(seen, string(v))
		tx.Set([]byte("fol-out"), v)
		return err
	})
	if err != nil || runs != 2 || seen[0] != "v1" || seen[1] != "v2" {
		t.Fatalf("Txn = %v after %d runs seeing %q; want 2 runs seeing [v1 v2]", err, runs, seen)
	}
	for _, val := range [][]byte{nil, []byte("1234")} {
		err := s.Txn(ctx, func(tx kv.Tx) error {
			if val == nil {
				tx.Delete(from)
			} else {
				tx.Set(from, val)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		err = s.View(ctx, func(tx kv.Tx) error {
			if err := kv.PrefetchFollow(tx, f, dir); err != nil {
				return err
			}
			got, err := kv.GetMany(tx, [][]byte{dir, from, named})
			if err == nil && (string(got[0]) != "d" || string(got[1]) != string(val) || string(got[2]) != "v2") {
				t.Errorf("from=%q: read %q", val, got)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
