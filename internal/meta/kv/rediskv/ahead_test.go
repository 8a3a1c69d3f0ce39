package rediskv

import (
	"context"
	"fmt"
	"testing"

	"shoal/internal/meta/kv"
)

// aheadFixture stores a directory-like range: key dir, and entries
// P+"e0".."e{n-1}" whose values "0000000i" name the keys "A"+"0000000i",
// valued "v1". It returns the prefix and the ScanAhead over it.
func aheadFixture(t *testing.T, s kv.Store, dir []byte, n int) ([]byte, kv.ScanAhead) {
	t.Helper()
	prefix := []byte("Pahead-01")
	err := s.Txn(context.Background(), func(tx kv.Tx) error {
		tx.Set(dir, []byte("d"))
		for i := range n {
			id := fmt.Sprintf("%08d", i)
			tx.Set(append(append([]byte{}, prefix...), fmt.Sprintf("e%d", i)...), []byte(id))
			tx.Set([]byte("A"+id), []byte("v1"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return prefix, kv.ScanAhead{Prefix: prefix, FollowPrefix: []byte("A"), FollowLen: 8}
}

// readAhead is a View's fn that reads the page ahead, lets change run once
// (another client's write), then reads the page, the keys it names and
// dir; with more, a further key too (a read round after the page). It
// records what it saw, once per run that got that far.
func readAhead(s kv.Store, a kv.ScanAhead, dir []byte, scanLimit int, more bool, change func(), seen *[]string) func(kv.Tx) error {
	runs := 0
	return func(tx kv.Tx) error {
		runs++
		if err := kv.PrefetchScan(tx, a, dir); err != nil {
			return err
		}
		if runs == 1 {
			change()
		}
		var ents, named [][]byte
		err := tx.Scan(a.Prefix, a.After, scanLimit, func(k, v []byte) bool {
			ents = append(ents, k[len(a.Prefix):])
			if a.FollowLen > 0 {
				named = append(named, append([]byte("A"), v...))
			}
			return true
		})
		if err != nil {
			return err
		}
		vals, err := kv.GetMany(tx, append(named, dir))
		if err != nil {
			return err
		}
		*seen = append(*seen, fmt.Sprintf("%s %s", ents, vals))
		if more {
			_, err = tx.Get([]byte("ahead-more"))
		}
		return err
	}
}

// TestPrefetchScanOneState reads a page ahead with the keys its values
// name, and has another client change one of those keys before fn reads
// them. fn must be given the values of the page's instant; if it reads
// nothing more, that is its answer (one state); if it reads a further key,
// that round must find the change and run fn again, which then sees the
// new state.
func TestPrefetchScanOneState(t *testing.T) {
	for _, more := range []bool{false, true} {
		t.Run(fmt.Sprintf("more=%v", more), func(t *testing.T) {
			s := openRedis(t)
			defer s.Close()
			ctx := context.Background()
			dir := []byte("ahead-dir")
			_, a := aheadFixture(t, s, dir, 3)
			change := func() {
				if err := s.Txn(ctx, func(o kv.Tx) error { o.Set([]byte("A00000001"), []byte("v2")); return nil }); err != nil {
					t.Errorf("concurrent writer: %v", err)
				}
			}
			var seen []string
			if err := s.View(ctx, readAhead(s, a, dir, 0, more, change, &seen)); err != nil {
				t.Fatal(err)
			}
			old := "[e0 e1 e2] [v1 v1 v1 d]"
			want := []string{old}
			if more {
				want = append(want, "[e0 e1 e2] [v1 v2 v1 d]")
			}
			if fmt.Sprint(seen) != fmt.Sprint(want) {
				t.Fatalf("fn saw %q; want %q", seen, want)
			}
		})
	}
}

// TestPrefetchScanPastPage reads ahead a page of two entries (names
// only), then Scans the whole range: the rest is read past the page with
// WATCHes, and that round must find the page changed meanwhile (an entry
// inserted in it), running fn again.
func TestPrefetchScanPastPage(t *testing.T) {
	s := openRedis(t)
	defer s.Close()
	ctx := context.Background()
	dir := []byte("ahead-dir2")
	prefix, a := aheadFixture(t, s, dir, 4)
	a.Limit, a.FollowLen = 2, 0
	change := func() {
		err := s.Txn(ctx, func(o kv.Tx) error {
			o.Set(append(append([]byte{}, prefix...), "e0a"...), []byte("00000002"))
			return nil
		})
		if err != nil {
			t.Errorf("concurrent writer: %v", err)
		}
	}
	var seen []string
	if err := s.View(ctx, readAhead(s, a, dir, 0, false, change, &seen)); err != nil {
		t.Fatal(err)
	}
	want := []string{"[e0 e0a e1 e2 e3] [d]"}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("fn saw %q; want %q (one run, after the insert)", seen, want)
	}
}

// TestPrefetchScanInTxn: in a transaction that may write, PrefetchScan is
// a Prefetch of the keys (the commit script checks point reads only), and
// the Scan reads as usual.
func TestPrefetchScanInTxn(t *testing.T) {
	s := openRedis(t)
	defer s.Close()
	ctx := context.Background()
	dir := []byte("ahead-dir3")
	_, a := aheadFixture(t, s, dir, 2)
	var seen []string
	if err := s.Txn(ctx, readAhead(s, a, dir, 1, false, func() {}, &seen)); err != nil {
		t.Fatal(err)
	}
	if want := "[e0] [v1 d]"; len(seen) != 1 || seen[0] != want {
		t.Fatalf("fn saw %q; want [%q]", seen, want)
	}
}
