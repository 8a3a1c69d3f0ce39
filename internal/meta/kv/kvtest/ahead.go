package kvtest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"

	"shoal/internal/meta/kv"
)

// aheadFollow names 'H'+ino(3)+"n"+the 8 bytes at offset 2 of From's value.
func aheadFollow(from []byte) *kv.Follow {
	return &kv.Follow{From: from, Prefix: append(prefix('H', 3), 'n'), Off: 2, Len: 8}
}

// testViewAhead checks kv.ViewAhead (the backend's FollowReader, if any):
// fn sees the keys, From and the key From names, absent ones as absent,
// an empty value as empty; a From too short or absent names nothing; a
// read of anything else runs fn again in a View, which sees it.
func testViewAhead(t *testing.T, s kv.Store) {
	ctx := ctxFor(t)
	a, empty, missing := key('H', 1, "a"), key('H', 1, "empty"), key('H', 1, "missing")
	from, short := key('H', 2, "from"), key('H', 2, "short")
	id := []byte{0, 0, 0, 0, 0, 0, 0, 7}
	named := append(append(prefix('H', 3), 'n'), id...)
	set(t, s, a, []byte("va"), empty, []byte{}, from, append([]byte("xx"), id...), short, []byte("xx1234567"), named, []byte("vn"))
	get := func(tx kv.Tx, k []byte) []byte {
		v, err := tx.Get(k)
		if err != nil {
			panic(err) // fails the run: ViewAhead reruns it in a View, which must not
		}
		return v
	}
	want := func(what string, got, want []byte) {
		t.Helper()
		if (got == nil) != (want == nil) || !bytes.Equal(got, want) {
			t.Errorf("%s = %s, want %s", what, show(got), show(want))
		}
	}
	runs := 0
	err := kv.ViewAhead(ctx, s, aheadFollow(from), [][]byte{a, empty, missing}, func(tx kv.Tx) error {
		runs++
		want("a", get(tx, a), []byte("va"))
		want("empty", get(tx, empty), []byte{})
		want("missing", get(tx, missing), nil)
		want("from", get(tx, from), append([]byte("xx"), id...))
		want("named", get(tx, named), []byte("vn"))
		return nil
	})
	if err != nil || runs != 1 {
		t.Fatalf("ViewAhead: %v after %d runs, want nil after 1", err, runs)
	}
	// From too short, then absent: it names nothing.
	for _, f := range [][]byte{short, missing} {
		err = kv.ViewAhead(ctx, s, aheadFollow(f), nil, func(tx kv.Tx) error {
			_, err := tx.Get(f)
			return err
		})
		if err != nil {
			t.Fatalf("ViewAhead of From %q: %v", f, err)
		}
	}
	// A key not read ahead: fn runs again, in a View, and sees it.
	var got []byte
	err = kv.ViewAhead(ctx, s, nil, [][]byte{missing}, func(tx kv.Tx) error {
		var err error
		got, err = tx.Get(a)
		return err
	})
	if err != nil {
		t.Fatalf("ViewAhead reading another key: %v", err)
	}
	want("another key", got, []byte("va"))
	errMine := errors.New("mine")
	if err := kv.ViewAhead(ctx, s, nil, [][]byte{a}, func(kv.Tx) error { return errMine }); !errors.Is(err, errMine) {
		t.Fatalf("ViewAhead returned %v, want fn's error", err)
	}
}

// testViewAheadOneState moves a record while ViewAhead follows to it: a
// writer replaces, in one Txn, the pointer From (naming record n) and
// record n by record n+1. Every ViewAhead must find the record its From
// names: reading From and the record in two states would miss it.
func testViewAheadOneState(t *testing.T, s kv.Store) {
	ctx := ctxFor(t)
	from := key('H', 4, "ptr")
	rec := func(n uint64) []byte { return append(append(prefix('H', 3), 'n'), u64(n)...) }
	ptr := func(n uint64) []byte { return append([]byte("xx"), u64(n)...) }
	set(t, s, from, ptr(0), rec(0), []byte("r"))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := uint64(0); ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			err := s.Txn(ctx, func(tx kv.Tx) error {
				v, err := tx.Get(from)
				if err != nil {
					return err
				}
				cur := binary.BigEndian.Uint64(v[2:])
				tx.Delete(rec(cur))
				tx.Set(rec(cur+1), []byte("r"))
				tx.Set(from, ptr(cur+1))
				return nil
			})
			if err != nil {
				t.Errorf("writer: %v", err)
				return
			}
		}
	}()
	deadline := time.Now().Add(time.Second)
	reads := 0
	for time.Now().Before(deadline) && !t.Failed() {
		err := kv.ViewAhead(ctx, s, aheadFollow(from), nil, func(tx kv.Tx) error {
			v, err := tx.Get(from)
			if err != nil || len(v) != 10 {
				return errors.Join(err, errors.New("pointer unreadable"))
			}
			r, err := tx.Get(rec(binary.BigEndian.Uint64(v[2:])))
			if err == nil && r == nil {
				t.Errorf("pointer %x names an absent record: two states read", v)
			}
			return err
		})
		if err != nil {
			t.Errorf("ViewAhead: %v", err)
		}
		reads++
	}
	close(stop)
	wg.Wait()
	t.Logf("%d reads", reads)
}
